package lake

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/relabel/relabel/io/keptio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/transforms/head"
	"github.com/relabel/relabel/transforms/mixture"
)

// TestFullAgain: a run whose posteriors need a fit it did not keep (or kept
// for another input) is followed by a full run, with the reason said; one
// whose fits are kept, or that needed none, is not.
func TestFullAgain(t *testing.T) {
	const d, c = 4, 3
	hd := &head.Fit{Folds: 2, D: d, C: c, Mean: make([]float64, d), SD: make([]float64, d), W: [][]float64{make([]float64, (d+1)*c), make([]float64, (d+1)*c)}, Weight: 0.3}
	pooled := &keptio.Pooled{Open: true, C: c, T: make([]float64, c*c), Prior: make([]float64, c)}
	both := &keptio.Fit{Head: hd, Pooled: pooled}
	offHead := &keptio.Fit{Head: &head.Fit{Folds: 2, D: d, C: c, Mean: hd.Mean, SD: hd.SD, Off: true}}
	wideHead := &keptio.Fit{Head: &head.Fit{Folds: 2, D: d + 1, C: c, Off: false, Weight: 0.3}}
	openPooled := map[string]string{resultio.MetaPooledStart: resultio.PooledStartOpen}
	headLast := map[string]string{resultio.MetaHeadLast: resultio.HeadLastOn}
	bayesLast := map[string]string{"given-label": "bayes"}
	given := &mixture.GivenFit{C: c, T: 0.2, A: []float64{.9, .05, .05, .05, .9, .05, .05, .05, .9}, LogLik: -3, Items: 7}
	for _, tc := range []struct {
		name string
		last map[string]string
		kept *keptio.Fit
		want string
	}{
		{"plain", map[string]string{"given-label": "vote"}, nil, ""},
		{"pooled start, not kept", openPooled, nil, pooledFull},
		{"pooled start, kept", openPooled, both, ""},
		{"pooled start, kept closed", openPooled, &keptio.Fit{Pooled: &keptio.Pooled{C: c}}, pooledFull},
		{"head, not kept", headLast, nil, headFull},
		{"head, kept", headLast, both, ""},
		{"head, kept off", headLast, offHead, headFull},
		{"head off at the end, nothing kept", map[string]string{}, offHead, ""},
		{"head of another dimension", map[string]string{}, wideHead, "dimension 5"},
		{"given-label bayes, not kept", bayesLast, both, givenFull},
		{"given-label bayes, kept", bayesLast, &keptio.Fit{Given: given}, ""},
		{"given-label bayes, kept for other classes", bayesLast, &keptio.Fit{Given: &mixture.GivenFit{C: c + 1, T: 0.2, A: make([]float64, (c+1)*(c+1))}}, "of 4 classes"},
	} {
		got := fullAgain(tc.last, tc.kept, d, c)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestFitFile: the fit file reads back what was kept; a damaged one, one of
// another version, or another file, is refused with what is wrong.
func TestFitFile(t *testing.T) {
	const d, c = 3, 2
	k := &keptio.Fit{
		Head:   &head.Fit{Folds: 2, Seed: 7, D: d, C: c, Mean: []float64{1, 2, 3}, SD: []float64{1, 1, 2}, W: [][]float64{{1, 2, 3, 4, 5, 6, 7, 8}, {8, 7, 6, 5, 4, 3, 2, 1}}, Weight: 0.25},
		Pooled: &keptio.Pooled{Open: true, Fitted: 10, Structure: 0.5, C: c, T: []float64{0.9, 0.1, 0.2, 0.8}, Prior: []float64{0.5, 0.5}},
		Given:  &mixture.GivenFit{C: c, T: 0.25, Power: 3, A: []float64{0.95, 0.05, 0.1, 0.9}, LogLik: -12.5, Items: 40, Mass: []float64{22.5, 17.5}},
	}
	b, err := keptio.EncodeFitFile(k)
	if err != nil {
		t.Fatal(err)
	}
	got, err := keptio.DecodeFitFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, k) {
		t.Errorf("read back %+v, want %+v", got, k)
	}
	const magic = "relabel fit-state\n"
	for name, bad := range map[string][]byte{
		"truncated":       b[:len(b)-3],
		"another version": append(append([]byte(magic), b[len(magic)]+1), b[len(magic)+1:]...),
		"another file":    []byte("relabel ivf-state\n..."),
	} {
		if _, err := keptio.DecodeFitFile(bad); err == nil {
			t.Errorf("%s: taken", name)
		}
	}
	// keepFit writes what the stages kept, and nothing when they kept nothing.
	ctx := context.Background()
	dir := t.TempDir()
	if names, err := keepFit(ctx, filepath.Join(dir, "none"), dir); err != nil || len(names) != 0 {
		t.Errorf("nothing kept: %v, %v; want no file", names, err)
	}
}
