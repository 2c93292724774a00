package reportio

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

// row is one output row of a synthetic output directory.
type row struct {
	id      int64
	sid     string
	given   []int32 // empty: unlabelled
	clean   int32
	cp, gp  float32 // gp NaN when unlabelled
	changed bool
	post    []ClassProb
	truth   int32
}

// fixture describes a synthetic output directory.
type fixture struct {
	c       int
	names   []string // string labels when set
	strIDs  bool
	multi   bool
	formats []shardio.Format // one per shard
	shards  [][]row
}

// randomFixture draws rows whose given_label_prob takes few values (ties
// between rows and across shards are the point), some unlabelled.
func randomFixture(seed uint64, c, rows int, formats []shardio.Format, names []string, strIDs, multi bool) fixture {
	rng := rand.New(rand.NewPCG(seed, 7))
	f := fixture{c: c, names: names, strIDs: strIDs, multi: multi, formats: formats, shards: make([][]row, len(formats))}
	id := int64(0)
	for i := 0; i < rows; i++ {
		s := rng.IntN(len(formats))
		r := row{id: id, clean: int32(rng.IntN(c)), cp: float32(rng.IntN(65)) / 64, truth: int32(rng.IntN(c))}
		if strIDs {
			r.sid = fmt.Sprintf("row-%04d", id)
		}
		id++
		if rng.IntN(10) == 0 {
			r.gp = float32(math.NaN())
		} else {
			n := 1
			if multi {
				n = 1 + rng.IntN(4)
			}
			for k := 0; k < n; k++ {
				r.given = append(r.given, int32(rng.IntN(c)))
			}
			r.gp = float32(rng.IntN(33)) / 32
			r.changed = rng.IntN(3) == 0
		}
		for k := 0; k < min(c, 4); k++ {
			r.post = append(r.post, ClassProb{int32((int(r.clean) + k) % c), float32(4-k) / 10})
		}
		f.shards[s] = append(f.shards[s], r)
	}
	return f
}

// majority is the oracle of the given (majority) label.
func majority(given []int32) int32 {
	best, bestN := int32(-1), 0
	for _, g := range given {
		n := 0
		for _, h := range given {
			if h == g {
				n++
			}
		}
		if n > bestN || (n == bestN && g < best) {
			best, bestN = g, n
		}
	}
	return best
}

// write writes the shards and summary.json under dir and returns the
// summary; edit may change it before it is written.
func (f fixture) write(t testing.TB, dir string, edit func(*resultio.Summary)) *resultio.Summary {
	t.Helper()
	ctx := context.Background()
	fs, err := blobio.For(dir)
	if err != nil {
		t.Fatal(err)
	}
	lk := schemas.LabelInt32
	if f.names != nil {
		lk = schemas.LabelString
	}
	ik := schemas.IDInt64
	if f.strIDs {
		ik = schemas.IDString
	}
	sum := &resultio.Summary{Version: "test", Input: "in/part-*.parquet", Output: dir, Classes: f.c, ClassNames: f.names,
		Neighbours: "exact", Device: "cpu (test)", Options: map[string]string{"k": "10", "rounds": "3"},
		ChangedFrom: make([]int64, f.c), ChangedTo: make([]int64, f.c),
		Timings: map[string]float64{"plan": 0.5, "pipeline": 12.25, "total": 12.75}, Metrics: map[string]int64{"rows_read": 0}}
	sum.Transition = make([][]float64, f.c)
	for a := range sum.Transition {
		sum.Transition[a] = make([]float64, f.c)
		for b := range sum.Transition[a] {
			sum.Transition[a][b] = 0.1 / float64(f.c)
		}
		sum.Transition[a][a] += 0.9
	}
	for s, rows := range f.shards {
		cl := &schemas.Cleaned{Shard: fmt.Sprintf("in/part-%d", s), IDKind: ik, Multi: f.multi, LabelOff: []int32{0}, PostOff: []int32{0}}
		var changed int64
		for _, r := range rows {
			cl.IDs = append(cl.IDs, r.id)
			if f.strIDs {
				cl.StrIDs = append(cl.StrIDs, r.sid)
			}
			if len(r.given) == 0 && !f.multi {
				cl.Labels = append(cl.Labels, schemas.Unlabelled)
			}
			cl.Labels = append(cl.Labels, r.given...)
			cl.LabelOff = append(cl.LabelOff, int32(len(cl.Labels)))
			cl.CleanLabel = append(cl.CleanLabel, r.clean)
			cl.CleanProb = append(cl.CleanProb, r.cp)
			cl.GivenProb = append(cl.GivenProb, r.gp)
			cl.Changed = append(cl.Changed, r.changed)
			for _, p := range r.post {
				cl.PostClass = append(cl.PostClass, p.Class)
				cl.PostProb = append(cl.PostProb, p.Prob)
			}
			cl.PostOff = append(cl.PostOff, int32(len(cl.PostClass)))
			if r.changed {
				changed++
				sum.ChangedFrom[majority(r.given)]++
				sum.ChangedTo[r.clean]++
			}
		}
		name := fmt.Sprintf("part-%d%s", s, f.formats[s].Ext())
		if len(rows) > 0 {
			if err := shardio.WriteShard(ctx, fs, filepath.Join(dir, name), f.formats[s], []*schemas.Cleaned{cl},
				schemas.Metadata("test", 1, nil, f.names), lk, f.names, ik, nil); err != nil {
				t.Fatal(err)
			}
			sum.Shards = append(sum.Shards, resultio.ShardReport{Input: cl.Shard, Output: name, Rows: int64(len(rows)), Changed: changed})
		}
		sum.Rows += int64(len(rows))
		sum.Changed += changed
	}
	sum.Metrics["rows_read"] = sum.Rows
	if edit != nil {
		edit(sum)
	}
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return sum
}

// rows lists every row in the order the report reads them.
func (f fixture) rows() []row {
	var all []row
	for _, s := range f.shards {
		all = append(all, s...)
	}
	return all
}

// truth is the fixture's truth by id.
func (f fixture) truth() Truth {
	m := map[resultio.Key]int32{}
	for _, r := range f.rows() {
		k := resultio.Key{Int: r.id}
		if f.strIDs {
			k = resultio.Key{Str: r.sid, IsStr: true}
		}
		m[k] = r.truth
	}
	return func(k resultio.Key) (int32, bool) { v, ok := m[k]; return v, ok }
}
