package noise

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/relabel/relabel/internal/devdata"
	"github.com/relabel/relabel/transforms/evaluate"
)

// TestDigitsLikeREADME generates sym and idn noise at 0.4 on sklearn_digits
// and checks that it is as hard for a K = 10 vote as the data README's files
// of the same name (.937 and .933): noise generated here then benchmarks
// comparably with the published figures.
func TestDigitsLikeREADME(t *testing.T) {
	dir := devdata.Dir(t, "sklearn_digits")
	const n, d, c = 1797, 64, 10
	x := devdata.ReadLE[float32](t, filepath.Join(dir, "features.f32"))
	truth := devdata.ReadLE[int32](t, filepath.Join(dir, "truth.i32"))
	if len(x) != n*d || len(truth) != n {
		t.Fatalf("read %d features, %d labels; want %d, %d", len(x), len(truth), n*d, n)
	}
	ds := Dataset{IDs: make([]int64, n), Truth: truth, Features: x, D: d, C: c}
	for i := range ds.IDs {
		ds.IDs[i] = int64(i)
	}
	for _, tc := range []struct {
		kind Kind
		knn  float64 // README, K = 10 z-scored vote over its file
		want float64 // expected wrong fraction
	}{
		{Symmetric, 0.937, 0.4},
		{InstanceDependent, 0.933, truncMean(0.4, 0.1)},
	} {
		out, err := Generate(ds, Params{Kind: tc.kind, Rate: 0.4, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if got, tol := wrongFraction(truth, out.Labels), binomTol(tc.want, n); math.Abs(got-tc.want) > tol {
			t.Errorf("%v: wrong fraction %.4f, want %.4f +- %.4f", tc.kind, got, tc.want, tol)
		}
		vote := evaluate.KNNVote(x, n, d, out.Labels, c, 10, true)
		if got := 1 - wrongFraction(truth, vote); math.Abs(got-tc.knn) > 0.015 {
			t.Errorf("%v: kNN vote accuracy %.4f, README's file %.3f +- .015", tc.kind, got, tc.knn)
		}
	}
}
