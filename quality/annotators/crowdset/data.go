package crowdset

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/relabel/relabel/io/annotio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/crowd"
)

// Set is one crowd set in memory. Items are in id order (feature sets: the
// order of items.parquet, whose ids are 0..n-1).
type Set struct {
	Name string
	C    int
	IDs  []int64
	// Items holds every item's annotations, sorted (crowd.Items.Sort).
	Items crowd.Items
	// Truth[i] is item i's true class, -1 when unknown.
	Truth []int32
	// D and Features (n x D, row-major) for the sets with items.parquet;
	// D = 0 otherwise. Given holds the items' labels (the labels list, who
	// gave them ignored) as GivenOff/Given.
	D        int
	Features []float32
	Given    []int32
	GivenOff []int32
}

// Len is the number of items.
func (s *Set) Len() int { return len(s.IDs) }

type meta struct {
	N int `json:"n"`
	C int `json:"C"`
}

// Load reads the set in dir: meta.json, annotations.parquet, truth.i32 and,
// when present, items.parquet.
func Load(dir string) (*Set, error) {
	ctx := context.Background()
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		return nil, fmt.Errorf("crowdset: %w", err)
	}
	var m meta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("crowdset: %s/meta.json: %w", dir, err)
	}
	s := &Set{Name: filepath.Base(dir), C: m.C}
	row := map[int64]int{}
	itemsPath := filepath.Join(dir, "items.parquet")
	if _, err := os.Stat(itemsPath); err == nil {
		shards, err := shardio.Scan(ctx, itemsPath, shardio.ReadOptions{})
		if err != nil {
			return nil, fmt.Errorf("crowdset: %w", err)
		}
		s.GivenOff = []int32{0}
		err = shardio.ReadEach(ctx, shards, shardio.ReadOptions{Classes: m.C, D: shards[0].D}, func(r *schemas.Rows) error {
			s.D = r.D
			for i, id := range r.IDs {
				row[id] = len(s.IDs)
				s.IDs = append(s.IDs, id)
				s.Given = append(s.Given, r.Labels[r.LabelOff[i]:r.LabelOff[i+1]]...)
				s.GivenOff = append(s.GivenOff, int32(len(s.Given)))
			}
			s.Features = append(s.Features, r.Features...)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("crowdset: %w", err)
		}
	}
	units, _, err := annotio.Scan(ctx, filepath.Join(dir, "annotations.parquet"), annotio.Options{Columns: annotio.DefaultColumns(), Classes: m.C})
	if err != nil {
		return nil, fmt.Errorf("crowdset: %w", err)
	}
	type ann struct {
		id, a int64
		l     int32
	}
	var all []ann
	for _, u := range units {
		bt, err := annotio.ReadUnit(ctx, u, annotio.Options{Columns: annotio.DefaultColumns(), Classes: m.C})
		if err != nil {
			return nil, fmt.Errorf("crowdset: %w", err)
		}
		for k := range bt.IDs {
			all = append(all, ann{bt.IDs[k], bt.Annotators[k], bt.Labels[k]})
		}
	}
	if s.D == 0 {
		for _, a := range all {
			if _, ok := row[a.id]; !ok {
				row[a.id] = -1
				s.IDs = append(s.IDs, a.id)
			}
		}
		slices.Sort(s.IDs)
		for i, id := range s.IDs {
			row[id] = i
		}
	}
	per := make([][]ann, len(s.IDs))
	for _, a := range all {
		i, ok := row[a.id]
		if !ok {
			return nil, fmt.Errorf("crowdset: %s: annotation of item %d, not in items.parquet", dir, a.id)
		}
		per[i] = append(per[i], a)
	}
	s.Items.Off = append(s.Items.Off, 0)
	for _, p := range per {
		for _, a := range p {
			s.Items.Annotator = append(s.Items.Annotator, a.a)
			s.Items.Label = append(s.Items.Label, a.l)
		}
		s.Items.Off = append(s.Items.Off, int32(len(s.Items.Label)))
	}
	s.Items.Sort()
	truth, err := resultio.ReadI32(context.Background(), filepath.Join(dir, "truth.i32"))
	if err != nil {
		return nil, fmt.Errorf("crowdset: %w", err)
	}
	s.Truth = make([]int32, len(s.IDs))
	for i, id := range s.IDs {
		if id < 0 || id >= int64(len(truth)) {
			return nil, fmt.Errorf("crowdset: %s: item %d has no entry in truth.i32 (%d entries)", dir, id, len(truth))
		}
		s.Truth[i] = truth[id]
	}
	return s, nil
}

// Accuracy is the share of items with a truth whose predicted class is it.
func (s *Set) Accuracy(pred []int32) float64 {
	n, ok := 0, 0
	for i, t := range s.Truth {
		if t < 0 {
			continue
		}
		n++
		if pred[i] == t {
			ok++
		}
	}
	return float64(ok) / float64(n)
}

// Argmax is each row's most probable class (the lowest on ties) of an
// n x C row-major matrix.
func Argmax(post []float64, C int) []int32 {
	out := make([]int32, len(post)/C)
	for i := range out {
		row := post[i*C : (i+1)*C]
		best := 0
		for c, v := range row {
			if v > row[best] {
				best = c
			}
		}
		out[i] = int32(best)
	}
	return out
}

// MajorityVote is each item's most frequent label, ties to the lowest class.
func (s *Set) MajorityVote() []int32 {
	return s.majority(func(int) bool { return false })
}
