package evaluate

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

func near(got Metric, want float64, tol float64) bool {
	if math.IsNaN(want) {
		return !got.Valid()
	}
	return got.Valid() && math.Abs(float64(got)-want) <= tol
}

func TestAUC(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name  string
		score []float64
		pos   []bool
		want  float64
	}{
		{"separated", []float64{3, 4, 1, 2}, []bool{true, true, false, false}, 1},
		{"reversed", []float64{1, 2, 3, 4}, []bool{true, true, false, false}, 0},
		{"all tied", []float64{7, 7, 7, 7, 7}, []bool{true, false, true, false, false}, 0.5},
		// pairs (pos, neg): (.5,.5) tie = 1/2, (.5,.2) 1, (.8,.5) 1, (.8,.2) 1.
		{"one tie", []float64{0.5, 0.8, 0.5, 0.2}, []bool{true, true, false, false}, 3.5 / 4},
		// pos {1, 2, 2}, neg {2, 3}: wins 0 + .5 + .5 vs the 2, 0 vs the 3: 1/6.
		{"ties across groups", []float64{1, 2, 2, 2, 3}, []bool{true, true, true, false, false}, 1.0 / 6},
		{"no positives", []float64{1, 2}, []bool{false, false}, nan},
		{"no negatives", []float64{1, 2}, []bool{true, true}, nan},
		{"empty", nil, nil, nan},
	} {
		if got := AUC(tc.score, tc.pos); !near(got, tc.want, 1e-12) {
			t.Errorf("%s: AUC = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestAUCOracle compares with the O(n^2) definition on scores with many ties.
func TestAUCOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{2, 17, 300} {
		score := make([]float64, n)
		pos := make([]bool, n)
		for i := range score {
			score[i] = float64(r.IntN(8))
			pos[i] = r.IntN(3) == 0
		}
		pos[0], pos[1] = true, false
		var wins float64
		var np, nn int
		for i := range n {
			if !pos[i] {
				nn++
				continue
			}
			np++
			for j := range n {
				switch {
				case pos[j]:
				case score[i] > score[j]:
					wins++
				case score[i] == score[j]:
					wins += 0.5
				}
			}
		}
		want := wins / float64(np*nn)
		if got := AUC(score, pos); !near(got, want, 1e-12) {
			t.Errorf("n=%d: AUC = %v, pairwise count %v", n, got, want)
		}
	}
}

func TestECE(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name    string
		conf    []float32
		correct []bool
		want    float64
		counts  map[int]int // bin -> count, for the non-empty bins
	}{
		// bins: .95 -> 14 (acc .5, conf .95), .05 -> 0 (acc 0), .5 -> 7 (acc 1):
		// 2/4*.45 + 1/4*.05 + 1/4*.5 = .3625
		{"three bins", []float32{0.95, 0.95, 0.05, 0.5}, []bool{true, false, false, true}, 0.3625, map[int]int{14: 2, 0: 1, 7: 1}},
		{"calibrated", []float32{0.75, 0.75, 0.75, 0.75}, []bool{true, true, false, true}, 0, map[int]int{11: 4}},
		// 0 belongs to the first bin and 1 to the last: 1/2*|0-0| + 1/2*|0-1|.
		{"ends", []float32{0, 1}, []bool{false, false}, 0.5, map[int]int{0: 1, 14: 1}},
		{"empty", nil, nil, nan, map[int]int{}},
	} {
		got, bins := ECE(tc.conf, tc.correct, ECEBins)
		if !near(got, tc.want, 1e-6) {
			t.Errorf("%s: ECE = %v, want %v", tc.name, got, tc.want)
		}
		if len(bins) != ECEBins {
			t.Fatalf("%s: %d bins, want %d", tc.name, len(bins), ECEBins)
		}
		for b, bin := range bins {
			if bin.Count != tc.counts[b] {
				t.Errorf("%s: bin %d (%v, %v] holds %d, want %d", tc.name, b, bin.Lo, bin.Hi, bin.Count, tc.counts[b])
			}
			if bin.Count == 0 && (bin.Accuracy.Valid() || bin.Confidence.Valid()) {
				t.Errorf("%s: empty bin %d has accuracy %v, confidence %v", tc.name, b, bin.Accuracy, bin.Confidence)
			}
		}
	}
}

func TestMetricJSON(t *testing.T) {
	type pair struct {
		A Metric `json:"a"`
		B Metric `json:"b"`
	}
	b, err := json.Marshal(pair{A: 0.25, B: NA})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"a":0.25,"b":null}` {
		t.Errorf("marshalled %s", b)
	}
	var back pair
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.A != 0.25 || back.B.Valid() {
		t.Errorf("round trip gave %+v", back)
	}
}
