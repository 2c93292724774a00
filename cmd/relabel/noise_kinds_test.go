package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/relabel/relabel/transforms/noise"
)

// TestNoiseStructuredKinds runs relabel noise with the partly structured
// kinds over the clean digits (10 classes) and checks each noisy file against
// its class map: perm flips go to the seed's derangement, multi flips to the
// seed's --targets classes, mixed flips to c+1 on the seed's pair half and
// elsewhere on the rest; the output agrees row for row with transforms/noise
// at the same seed; and --targets outside [1, C-1] exits 2 naming the flag.
func TestNoiseStructuredKinds(t *testing.T) {
	clean, rows := qClean(t)
	n, c := rows.Len(), 10
	dir := t.TempDir()
	const seed = 5
	ds := noise.Dataset{IDs: rows.IDs, Truth: rows.Labels, C: c}
	for _, tc := range []struct {
		name    string
		args    []string
		p       noise.Params
		allowed func(y int32) []int32 // the classes a flip of y may go to
	}{
		{"perm", []string{"--kind", "perm"}, noise.Params{Kind: noise.Perm},
			func(y int32) []int32 { return []int32{noise.Derangement(c, seed)[y]} }},
		{"multi", []string{"--kind", "multi"}, noise.Params{Kind: noise.Multi, Targets: 2},
			func(y int32) []int32 { return noise.MultiTargets(c, 2, seed)[y] }},
		{"multi-4", []string{"--kind", "multi", "--targets", "4"}, noise.Params{Kind: noise.Multi, Targets: 4},
			func(y int32) []int32 { return noise.MultiTargets(c, 4, seed)[y] }},
		{"mixed", []string{"--kind", "mixed"}, noise.Params{Kind: noise.Mixed},
			func(y int32) []int32 {
				if noise.MixedPairClasses(c, seed)[y] {
					return []int32{(y + 1) % int32(c)}
				}
				var all []int32
				for k := range int32(c) {
					if k != y {
						all = append(all, k)
					}
				}
				return all
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name+".parquet")
			stdout := qMust(t, append([]string{"noise", "--input", clean, "--output", out, "--rate", "0.45", "--seed", "5"}, tc.args...)...)
			if !strings.Contains(stdout, "noise at rate 0.45") {
				t.Errorf("stdout %q", stdout)
			}
			got := qRead(t, out, c)
			if !slices.Equal(got.IDs, rows.IDs) || got.Multi {
				t.Fatalf("the noisy file's ids differ from the clean file's, or it has a list of labels")
			}
			wrong := 0
			targets := map[int32]map[int32]bool{}
			for i, y := range rows.Labels {
				l := got.Labels[i]
				if l == y {
					continue
				}
				wrong++
				if !slices.Contains(tc.allowed(y), l) {
					t.Fatalf("row %d: %s flip of %d gave %d, allowed %v", i, tc.name, y, l, tc.allowed(y))
				}
				if targets[y] == nil {
					targets[y] = map[int32]bool{}
				}
				targets[y][l] = true
			}
			if frac := float64(wrong) / float64(n); frac < 0.45-qTol(0.45, n) || frac > 0.45+qTol(0.45, n) {
				t.Errorf("%.4f of the labels wrong, want 0.45", frac)
			}
			if strings.HasPrefix(tc.name, "multi") {
				// Every class flips to more than one class, or the targets
				// were not used.
				spread := 0
				for _, m := range targets {
					if len(m) > 1 {
						spread++
					}
				}
				if spread < c/2 {
					t.Errorf("only %d classes flipped to more than one class", spread)
				}
			}
			p := tc.p
			p.Rate, p.Seed = 0.45, seed
			want, err := noise.Generate(ds, p)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Labels, want.Labels) {
				t.Errorf("the file's labels differ from transforms/noise's at the same seed")
			}
		})
	}

	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"targets 0", []string{"--kind", "multi", "--rate", "0.4", "--targets", "0"}, "--targets 0"},
		{"targets C", []string{"--kind", "multi", "--rate", "0.4", "--targets", "10"}, "--targets 10, want at most C-1 = 9"},
		{"no rate", []string{"--kind", "perm"}, "--rate is required"},
	} {
		code, _, errs := qDispatch(t, append([]string{"noise", "--input", clean, "--output", filepath.Join(dir, "x.parquet")}, tc.args...)...)
		if code != 2 || !strings.Contains(errs, tc.msg) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", tc.name, code, errs, tc.msg)
		}
	}
	// An explicit value is used as given: 9 targets is symmetric noise's
	// spread, every other class.
	out := filepath.Join(dir, "multi-9.parquet")
	qMust(t, "noise", "--input", clean, "--output", out, "--kind", "multi", "--rate", "0.45", "--targets", "9", "--seed", "5")
	want, err := noise.MultiLabels(ds, 0.45, 9, seed)
	if err != nil {
		t.Fatal(err)
	}
	if got := qRead(t, out, c); !slices.Equal(got.Labels, want) {
		t.Errorf("--targets 9: labels differ from transforms/noise's with 9 targets")
	}
}
