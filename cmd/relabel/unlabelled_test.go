package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

// writeDigits writes the shipped digits shards as one Parquet file with the
// labels edited by edit (return schemas.Unlabelled for a null label).
func writeDigits(t *testing.T, path string, edit func(id int64, label int32) int32) {
	t.Helper()
	ctx := context.Background()
	shards, err := shardio.Scan(ctx, digitsShards, shardio.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := shardio.ReadAll(ctx, shards, shardio.ReadOptions{Classes: 10, D: shards[0].D})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		for i := range r.Labels {
			r.Labels[i] = edit(r.IDs[i], r.Labels[i])
		}
	}
	fs, err := blobio.For(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := shardio.WriteInput(ctx, fs, path, shardio.Parquet, rows, schemas.LabelInt32, nil, nil); err != nil {
		t.Fatal(err)
	}
}

// TestRunUnlabelled: unlabelled rows get a clean label from their
// neighbours when the rounds reach a labelled row, and a null clean_label
// (counted in summary.json's unresolved and said on the terminal) when they
// do not; input that cannot work fails before anything runs.
func TestRunUnlabelled(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "few.parquet")
	// 95% unlabelled: one round cannot reach every row.
	writeDigits(t, in, func(id int64, l int32) int32 {
		if (id*7919)%100 < 95 {
			return schemas.Unlabelled
		}
		return l
	})
	unresolved := map[string]int64{}
	// "1" and "10" without the linear head, which reaches every candidate
	// from the first round (it is fitted on the labelled rows' features and
	// predicts for all): "head1", the default, leaves none unresolved.
	for _, rounds := range []string{"1", "10", "head1"} {
		out := filepath.Join(dir, "out"+rounds)
		args := []string{"run", "--input", in, "--output", out, "--rounds", strings.TrimPrefix(rounds, "head"), "--classes", "10", "--report=false"}
		if !strings.HasPrefix(rounds, "head") {
			args = append(args, "--head", "off")
		}
		r := mustRelabel(t, args...)
		o, err := resultio.ReadOutput(context.Background(), out, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		var nulls int64
		for i := 0; i < o.Len(); i++ {
			labelled := o.GivenOff[i+1] > o.GivenOff[i]
			if o.Clean[i] < 0 {
				nulls++
				if labelled {
					t.Errorf("rounds %s: labelled row %d has no clean label", rounds, o.IDs[i])
				}
				if !math.IsNaN(float64(o.CleanProb[i])) || o.Changed[i] {
					t.Errorf("rounds %s: row %d without a clean label has clean_prob %v, changed %v", rounds, o.IDs[i], o.CleanProb[i], o.Changed[i])
				}
			} else if !(o.CleanProb[i] > 0 && o.CleanProb[i] <= 1) {
				t.Errorf("rounds %s: row %d clean_prob %v", rounds, o.IDs[i], o.CleanProb[i])
			}
		}
		var sum struct {
			Rows       int64 `json:"rows"`
			Unresolved int64 `json:"unresolved"`
		}
		b, err := os.ReadFile(filepath.Join(out, "summary.json"))
		if err != nil || json.Unmarshal(b, &sum) != nil {
			t.Fatalf("summary.json: %v", err)
		}
		if sum.Unresolved != nulls || sum.Rows != 1797 {
			t.Errorf("rounds %s: summary says %d rows, %d unresolved; the output has 1797 rows, %d null clean labels", rounds, sum.Rows, sum.Unresolved, nulls)
		}
		if nulls > 0 && !strings.Contains(r.stdout, "got no clean label") {
			t.Errorf("rounds %s: %d rows without a clean label, but stdout does not say so:\n%s", rounds, nulls, r.stdout)
		}
		unresolved[rounds] = nulls
	}
	if unresolved["1"] == 0 || unresolved["10"] >= unresolved["1"] {
		t.Errorf("rows without a clean label: %d after 1 round, %d after 10; want some after 1 and fewer after 10", unresolved["1"], unresolved["10"])
	}
	if unresolved["head1"] != 0 {
		t.Errorf("with the linear head, %d rows without a clean label after 1 round, want none", unresolved["head1"])
	}

	// No label at all, or a label outside --classes: refused at plan time
	// (exit 1, naming the file; no output made).
	none := filepath.Join(dir, "none.parquet")
	writeDigits(t, none, func(int64, int32) int32 { return schemas.Unlabelled })
	for _, c := range []struct {
		name  string
		args  []string
		code  int
		wants []string
	}{
		{"all unlabelled", []string{"--input", none}, 1, []string{"no labels", none}},
		{"all unlabelled, classes given", []string{"--input", none, "--classes", "10"}, 1, []string{"no labels"}},
		{"label outside classes", []string{"--input", in, "--classes", "5"}, 1, []string{in, "row", `column "label"`, "outside [0,5)"}},
		{"class names with integer labels", []string{"--input", in, "--class-names", "a,b"}, 2, []string{"--class-names", "class indices"}},
	} {
		out := filepath.Join(dir, "bad-"+strings.ReplaceAll(c.name, " ", "-"))
		r := relabel(t, append([]string{"run", "--output", out}, c.args...)...)
		if r.code != c.code {
			t.Errorf("%s: exit %d, want %d; stderr %s", c.name, r.code, c.code, tail(r.stderr, 500))
		}
		for _, w := range c.wants {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: stderr lacks %q: %s", c.name, w, tail(r.stderr, 500))
			}
		}
		if strings.Contains(r.stderr, "round 1/") {
			t.Errorf("%s: the pipeline ran before the error", c.name)
		}
		if ents, _ := os.ReadDir(out); len(ents) > 0 {
			t.Errorf("%s: output %s holds %d entries", c.name, out, len(ents))
		}
	}
}
