package stages

import (
	"context"
	"math"
	"path"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

// GivenLabel is the label an item was given: its single label, or the
// majority of its annotations (ties to the lower class), or Unlabelled.
func GivenLabel(labels []int32) int32 {
	switch len(labels) {
	case 0:
		return schemas.Unlabelled
	case 1:
		return labels[0]
	}
	best, bestN := int32(schemas.Unlabelled), 0
	for i, l := range labels {
		if l < 0 {
			continue
		}
		n := 0
		for _, m := range labels[i:] {
			if m == l {
				n++
			}
		}
		if n > bestN || (n == bestN && l < best) {
			best, bestN = l, n
		}
	}
	return best
}

// ToCleaned turns a batch's final states into output rows.
func ToCleaned(it *Items) schemas.Cleaned {
	n := it.Len()
	c := schemas.Cleaned{
		Shard: it.Shard, Offset: it.Offset, IDKind: it.IDKind, IDs: it.IDs, StrIDs: it.StrIDs,
		Labels: it.Labels, LabelOff: it.LabelOff, Multi: it.Multi,
		CleanLabel: make([]int32, n), CleanProb: make([]float32, n), GivenProb: make([]float32, n),
		Changed: make([]bool, n), PostOff: make([]int32, n+1),
	}
	st := &it.State
	for i := 0; i < n; i++ {
		top, p := st.Top(i)
		c.CleanLabel[i], c.CleanProb[i] = top, p
		given := GivenLabel(it.Labels[it.LabelOff[i]:it.LabelOff[i+1]])
		c.GivenProb[i] = float32(math.NaN())
		if given >= 0 {
			c.GivenProb[i] = 0
			for e := st.ItemOff[i]; e < st.ItemOff[i+1]; e++ {
				if st.Class[e] == given {
					c.GivenProb[i] = st.Pi[e]
				}
			}
			c.Changed[i] = top >= 0 && top != given
		}
		c.PostClass = append(c.PostClass, st.Class[st.ItemOff[i]:st.ItemOff[i+1]]...)
		c.PostProb = append(c.PostProb, st.Pi[st.ItemOff[i]:st.ItemOff[i+1]]...)
		c.PostOff[i+1] = int32(len(c.PostClass))
	}
	return c
}

// ShardReport is what writing one shard tells the summary.
type ShardReport struct {
	Input   string `json:"input"`
	Output  string `json:"output"`
	Rows    int64  `json:"rows"`
	Changed int64  `json:"changed"`
	// Unresolved counts rows left without a clean label (null): unlabelled
	// rows that no labelled row reached through neighbours within the rounds.
	Unresolved int64 `json:"unresolved,omitempty"`
	// ChangedTo[c] counts labels changed into class c; ChangedFrom[c] out of c.
	ChangedFrom []int64 `json:"changed_from"`
	ChangedTo   []int64 `json:"changed_to"`
	// Trans[c*C+c'] sums pi_i(c) over items given c': the unnormalised
	// estimate of P(given = c' | clean = c). Only for C <= MaxDenseClasses.
	Trans []float64 `json:"trans,omitempty"`
}

// MaxDenseClasses bounds the class count for which the summary carries a dense
// transition matrix (C^2 numbers).
const MaxDenseClasses = 256

// WriteParams configures the writer stage.
type WriteParams struct {
	TmpDir     string
	Format     shardio.Format
	Meta       map[string]string
	LabelKind  schemas.LabelKind
	ClassNames []string
	IDKind     schemas.IDKind
	C          int
}

// OutputName is the output file name of an input shard: the same base name with
// the output format's extension.
func OutputName(input string, f shardio.Format) string {
	base := path.Base(strings.ReplaceAll(input, "\\", "/"))
	if i := strings.LastIndex(base, "."); i > 0 {
		base = base[:i]
	}
	return base + f.Ext()
}

type keyByShardFn struct{}

func (keyByShardFn) ProcessElement(it Items) (string, schemas.Cleaned) {
	return it.Shard, ToCleaned(&it)
}

// writeFn writes one shard's rows to the temporary directory and a report
// beside it (resultio.WriteShard); the launcher renames them into place once
// every shard is written.
type writeFn struct {
	P WriteParams
}

func (f *writeFn) ProcessElement(ctx context.Context, shard string, iter func(*schemas.Cleaned) bool) error {
	var batches []*schemas.Cleaned
	var c schemas.Cleaned
	for iter(&c) {
		cc := c
		batches = append(batches, &cc)
		c = schemas.Cleaned{}
	}
	name := OutputName(shard, f.P.Format)
	rep := report(shard, name, batches, f.P.C)
	err := resultio.WriteShard(ctx, f.P.TmpDir, name, batches, rep, resultio.ShardOptions{
		Format: f.P.Format, Meta: f.P.Meta, LabelKind: f.P.LabelKind, ClassNames: f.P.ClassNames, IDKind: f.P.IDKind,
	})
	if err != nil {
		return err
	}
	rowsWritten.Inc(ctx, rep.Rows)
	labelsChanged.Inc(ctx, rep.Changed)
	return nil
}

func report(shard, name string, batches []*schemas.Cleaned, c int) ShardReport {
	r := ShardReport{Input: shard, Output: name, ChangedFrom: make([]int64, c), ChangedTo: make([]int64, c)}
	if c <= MaxDenseClasses {
		r.Trans = make([]float64, c*c)
	}
	for _, b := range batches {
		for i := range b.IDs {
			r.Rows++
			if b.CleanLabel[i] < 0 {
				r.Unresolved++
			}
			given := GivenLabel(b.Labels[b.LabelOff[i]:b.LabelOff[i+1]])
			if b.Changed[i] {
				r.Changed++
				r.ChangedFrom[given]++
				r.ChangedTo[b.CleanLabel[i]]++
			}
			if r.Trans != nil && given >= 0 {
				for e := b.PostOff[i]; e < b.PostOff[i+1]; e++ {
					r.Trans[int(b.PostClass[e])*c+int(given)] += float64(b.PostProb[e])
				}
			}
		}
	}
	return r
}

var (
	rowsWritten   = beam.NewCounter("relabel", "rows_written")
	labelsChanged = beam.NewCounter("relabel", "labels_changed")
)

func init() {
	register.DoFn1x2[Items, string, schemas.Cleaned](&keyByShardFn{})
	register.DoFn3x1[context.Context, string, func(*schemas.Cleaned) bool, error](&writeFn{})
	register.Iter1[schemas.Cleaned]()
}

// Write writes items (PCollection<Items>) as one output file per input shard
// under p.TmpDir, with a report per shard.
func Write(s beam.Scope, items beam.PCollection, p WriteParams) {
	s = s.Scope("relabel.Write")
	keyed := beam.ParDo(s, &keyByShardFn{}, items)
	grouped := beam.GroupByKey(s, keyed)
	beam.ParDo0(s, &writeFn{P: p}, grouped)
}
