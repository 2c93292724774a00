package weak

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func TestRotationOrthogonal(t *testing.T) {
	for _, dim := range []int{1, 2, 33} {
		q := Rotation(dim, 7)
		var p mat.Dense
		p.Mul(q.T(), q)
		for i := range dim {
			for j := range dim {
				want := 0.0
				if i == j {
					want = 1
				}
				if math.Abs(p.At(i, j)-want) > 1e-12 {
					t.Fatalf("dim %d: (QᵀQ)[%d][%d] = %g, want %g", dim, i, j, p.At(i, j), want)
				}
			}
		}
		if !mat.Equal(q, Rotation(dim, 7)) {
			t.Errorf("dim %d: same seed, other rotation", dim)
		}
		if dim > 1 && mat.Equal(q, Rotation(dim, 8)) {
			t.Errorf("dim %d: seeds 7 and 8 give the same rotation", dim)
		}
	}
}

// small is 5 rows of 3 features on different scales, one constant column.
func small() ([]float32, []int64) {
	x := []float32{
		1, 100, 5,
		2, 300, 5,
		3, 200, 5,
		4, 500, 5,
		5, 400, 5,
	}
	return x, []int64{10, 11, 12, 13, 14}
}

func TestFeatures(t *testing.T) {
	x, ids := small()
	out, dw, err := Features(x, ids, 3, Params{Ratio: 2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if dw != 9 || len(out) != 5*9 {
		t.Fatalf("dimension %d, %d values; want 9, 45", dw, len(out))
	}
	// Undo the rotation: the first d coordinates are the z-scored features,
	// the constant column 0, the rest the nuisance with no trace of x.
	q := Rotation(dw, 3)
	for i := range 5 {
		var back mat.VecDense
		back.MulVec(q, mat.NewVecDense(dw, f64(out[i*dw:(i+1)*dw])))
		mean, sd := 3.0, math.Sqrt(2)
		if got, want := back.AtVec(0), (float64(x[i*3])-mean)/sd; math.Abs(got-want) > 1e-5 {
			t.Errorf("row %d: feature 0 = %g after undoing the rotation, want %g", i, got, want)
		}
		if got := back.AtVec(2); math.Abs(got) > 1e-5 {
			t.Errorf("row %d: the constant feature is %g, want 0", i, got)
		}
	}
	// Row order does not matter: each row's nuisance is seeded by its id.
	xr := slices.Concat(x[12:15], x[0:12])
	idr := slices.Concat(ids[4:5], ids[0:4])
	outr, _, err := Features(xr, idr, 3, Params{Ratio: 2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(outr[:dw], out[4*dw:]) {
		t.Errorf("row of id 14 differs when it comes first: %v vs %v", outr[:dw], out[4*dw:])
	}
	// Another seed, other nuisance.
	out2, _, _ := Features(x, ids, 3, Params{Ratio: 2, Seed: 4})
	if slices.Equal(out, out2) {
		t.Error("seeds 3 and 4 give the same features")
	}
}

func TestFeaturesRejectsRatio(t *testing.T) {
	x, ids := small()
	if _, _, err := Features(x, ids, 3, Params{}); err == nil {
		t.Error("ratio 0 accepted")
	}
}

func f64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, f := range v {
		out[i] = float64(f)
	}
	return out
}
