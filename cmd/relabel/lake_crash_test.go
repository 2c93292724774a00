package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/relabel/relabel/internal/faults"
	"github.com/relabel/relabel/io/icebergio"
	"github.com/relabel/relabel/io/icebergio/icebergiotest"
	"github.com/relabel/relabel/io/keptio"
	"github.com/relabel/relabel/schemas"
)

// lakeRows makes n rows of 3 overlapping Gaussian clusters in d = 8 with
// 20% of the labels flipped, ids from first on: an append of them enters
// old rows' neighbourhoods, so incremental runs re-score and rewrite.
func lakeRows(first int64, n int) *schemas.Rows {
	const d = 8
	rng := rand.New(rand.NewPCG(uint64(first), 3))
	r := &schemas.Rows{D: d, LabelOff: []int32{0}}
	for i := 0; i < n; i++ {
		c := rng.IntN(3)
		r.IDs = append(r.IDs, first+int64(i))
		for j := 0; j < d; j++ {
			mu := float32(0)
			if j == c {
				mu = 2
			}
			r.Features = append(r.Features, mu+float32(rng.NormFloat64()))
		}
		lab := int32(c)
		if rng.Float64() < 0.2 {
			lab = int32(rng.IntN(3))
		}
		r.Labels = append(r.Labels, lab)
		r.LabelOff = append(r.LabelOff, int32(len(r.Labels)))
	}
	return r
}

// lakeDays are the three daily inputs of the crash tests.
var lakeDays = []*schemas.Rows{lakeRows(0, 400), lakeRows(400, 400), lakeRows(800, 200)}

// crashed runs relabel with RELABEL_FAULT=point and checks it died there.
func crashed(t *testing.T, point string, args ...string) {
	t.Helper()
	r := relabelEnv(t, map[string]string{faults.Env: point}, args...)
	if r.code != -1 { // -1: killed by a signal
		t.Fatalf("RELABEL_FAULT=%s: exit %d, want killed by SIGKILL; stdout %s stderr %s", point, r.code, r.stdout, tail(r.stderr, 500))
	}
}

// TestLakeDirCrash: a directory lake relabelled incrementally after each of
// two days, with the first (full) or the second (incremental) run killed at
// each named point and rerun, ends byte for byte as an uninterrupted
// sequence of runs, with nothing temporary left; a further rerun changes
// nothing.
func TestLakeDirCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the crash test runs the binary about 40 times")
	}
	write := func(in string, days ...int) {
		for _, d := range days {
			writeRows(t, filepath.Join(in, fmt.Sprintf("day-%d.parquet", d)), schemas.LabelInt32, nil, lakeDays[d])
		}
	}
	args := func(in, out string) []string {
		return []string{"run", "--input", filepath.Join(in, "*.parquet"), "--output", out, "--incremental", "--rounds", "2", "--l", "40", "--head", "off"} // few rounds: the head, still on, would make the next run a full one (lake TestLakeHeadFull)
	}
	refIn, ref := t.TempDir(), filepath.Join(t.TempDir(), "out")
	write(refIn, 0, 1)
	mustRelabel(t, args(refIn, ref)...)
	write(refIn, 2)
	r := mustRelabel(t, args(refIn, ref)...)
	if !strings.Contains(r.stdout, "incremental run: 1 new and 0 changed input files (200 rows)") || strings.Contains(r.stdout, "0 old rows re-scored") {
		t.Fatalf("reference: the second run did not relabel day 2 incrementally, re-scoring old rows: %s", r.stdout)
	}
	shards := []string{"day-0.arrow", "day-1.arrow", "day-2.arrow"}
	for _, c := range []struct {
		run    int // which run is killed
		points []string
	}{
		{0, []string{"locked", "pipeline-done", "commit-journal", "commit-file-1", "commit-summary"}},
		{1, []string{"locked", "pipeline-done", "commit-journal", "commit-unmarked", "commit-file-0", "commit-file-1", "commit-summary"}},
	} {
		for _, point := range c.points {
			t.Run(fmt.Sprintf("run%d/%s", c.run, point), func(t *testing.T) {
				t.Parallel() // its own directories; two runs at once overlap their start-up
				in, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
				write(in, 0, 1)
				if c.run == 0 {
					crashed(t, point, args(in, out)...)
				}
				mustRelabel(t, args(in, out)...)
				write(in, 2)
				if c.run == 1 {
					crashed(t, point, args(in, out)...)
					// What a reader sees: no summary.json, or a complete
					// output of one run.
					if _, err := os.Stat(filepath.Join(out, "summary.json")); err == nil {
						if got := slices.DeleteFunc(listDir(t, out), func(n string) bool {
							return strings.HasPrefix(n, ".") || n == "report.html" || n == keptio.FitFileName
						}); !slices.Equal(got, append(shards[:2:2], "summary.json")) && !slices.Equal(got, append(slices.Clone(shards), "summary.json")) {
							t.Errorf("after the crash the output holds %q", got)
						}
					}
				}
				mustRelabel(t, args(in, out)...)
				sameFiles(t, ref, out, shards...)
				want := append(slices.Clone(shards), keptio.FitFileName, "report.html", "summary.json")
				if got := listDir(t, out); !slices.Equal(got, want) {
					t.Errorf("after the rerun the output holds %q, want %q", got, want)
				}
				// A finished run, rerun: nothing changes.
				before := snapshot(t, out, shards...)
				r := mustRelabel(t, args(in, out)...)
				if !strings.Contains(r.stdout, "nothing changed") || !reflect.DeepEqual(snapshot(t, out, shards...), before) {
					t.Errorf("rerun of a finished run: %s; shards changed: %t", r.stdout, !reflect.DeepEqual(snapshot(t, out, shards...), before))
				}
			})
		}
	}
}

// snapshot reads the named files of dir.
func snapshot(t *testing.T, dir string, names ...string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		m[n] = string(b)
	}
	return m
}

// tableRows reads the output table name with iceberg-go's scan: each row's
// clean label and probability, by id.
func tableRows(t *testing.T, uri, name string) (map[int64]string, int) {
	t.Helper()
	ctx := context.Background()
	cat, err := icebergio.OpenCatalog(ctx, uri, icebergio.CatalogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	tbl, err := cat.LoadTable(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	at := icebergiotest.Scan(t, tbl)
	defer at.Release()
	col := func(name string) int { return at.Schema().FieldIndices(name)[0] }
	idc, cc, pc := col(schemas.ColID), col(schemas.ColCleanLabel), col(schemas.ColCleanProb)
	got := map[int64]string{}
	for ci, ch := range at.Column(idc).Data().Chunks() {
		labs, probs := at.Column(cc).Data().Chunk(ci), at.Column(pc).Data().Chunk(ci)
		for i := 0; i < ch.Len(); i++ {
			id := ch.(*array.Int64).Value(i)
			if _, dup := got[id]; dup {
				t.Fatalf("%s: id %d twice", name, id)
			}
			got[id] = labs.ValueStr(i) + "/" + probs.ValueStr(i)
		}
	}
	return got, len(tbl.Metadata().Snapshots())
}

// TestLakeTableCrash: the table path killed before and at its commit, in
// the first (full) and the second (incremental) run, and rerun, ends with
// the same output table as uninterrupted runs: the same rows, labels and
// probabilities, one snapshot per finished run; a further rerun commits
// nothing.
func TestLakeTableCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the crash test runs the binary about 20 times")
	}
	args := func(uri string) []string {
		return []string{"run", "--catalog", uri, "--input-table", "ns.items", "--output-table", "ns.out", "--incremental", "--rounds", "2", "--l", "40", "--head", "off"} // few rounds: the head, still on, would make the next run a full one (lake TestLakeHeadFull)
	}
	refURI := "sqlite://" + filepath.Join(t.TempDir(), "catalog.db")
	appendTableRows(t, refURI, lakeDays[0])
	mustRelabel(t, args(refURI)...)
	appendTableRows(t, refURI, lakeDays[1])
	mustRelabel(t, args(refURI)...)
	want, _ := tableRows(t, refURI, "ns.out")
	for _, run := range []int{0, 1} {
		for _, point := range []string{"pipeline-done", "table-commit"} {
			t.Run(fmt.Sprintf("run%d/%s", run, point), func(t *testing.T) {
				t.Parallel() // its own directories; two runs at once overlap their start-up
				uri := "sqlite://" + filepath.Join(t.TempDir(), "catalog.db")
				appendTableRows(t, uri, lakeDays[0])
				if run == 0 {
					crashed(t, point, args(uri)...)
				}
				mustRelabel(t, args(uri)...)
				appendTableRows(t, uri, lakeDays[1])
				if run == 1 {
					crashed(t, point, args(uri)...)
					if _, snaps := tableRows(t, uri, "ns.out"); snaps != 1 {
						t.Errorf("after the crash the output table has %d snapshots, want the first run's 1", snaps)
					}
				}
				mustRelabel(t, args(uri)...)
				got, snaps := tableRows(t, uri, "ns.out")
				if snaps != 2 || !reflect.DeepEqual(got, want) {
					t.Errorf("after the rerun: %d snapshots (want 2), rows equal to the uninterrupted runs': %t (%d rows, want %d)", snaps, reflect.DeepEqual(got, want), len(got), len(want))
				}
				r := mustRelabel(t, args(uri)...)
				if again, snaps := tableRows(t, uri, "ns.out"); !strings.Contains(r.stdout, "nothing committed") || snaps != 2 || !reflect.DeepEqual(again, got) {
					t.Errorf("rerun of a finished run: %s; %d snapshots", r.stdout, snaps)
				}
			})
		}
	}
}
