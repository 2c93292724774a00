package reportio

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/annotio"
	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/resultio"
)

// Bounds of the annotators table: a crowd may have millions of annotators,
// and the page must stay small enough to open.
const (
	// DefaultAnnotators is how many unflagged annotators the table lists
	// (those who gave the most labels).
	DefaultAnnotators = 100
	// MaxFlaggedAnnotators is how many flagged annotators (spammers and
	// adversaries) the table lists at most (those who gave the most labels).
	MaxFlaggedAnnotators = 1000
)

// AnnotatorRow is one annotator of the table.
type AnnotatorRow struct {
	// ID is the annotator's id; IntID says it is an int64 (sorted as a
	// number); Anonymous marks the labels no annotation named (null id).
	ID        string
	IntID     bool
	Anonymous bool
	Labels    int64
	Accuracy  float64
	// Diagonal is the diagonal of its estimated matrix, P(label c | class c).
	Diagonal           []float64
	Spammer, Adversary bool
	ord                int64 // row in the file: ties keep the earlier row
}

// Flagged reports whether the annotator is flagged as spammer or adversary.
func (a *AnnotatorRow) Flagged() bool { return a.Spammer || a.Adversary }

// AnnotatorsReport is the annotators file, counted in one pass, with a
// bounded selection of its rows.
type AnnotatorsReport struct {
	File string
	// Annotators, Spammers and Adversaries are counted from the file (and
	// checked against summary.json).
	Annotators, Spammers, Adversaries int64
	// TooFew (counted from the file: unflagged, fewer than MinLabels labels)
	// is shown as "not enough labels" rather than as a verdict.
	TooFew, MinLabels int64
	Strength          float64
	// Model and Choice are summary.json's (resultio.AnnotatorsSummary): the model
	// the posteriors come from and the held-out evidence for it; Choice is
	// nil where the summary records none.
	Model  string
	Choice *resultio.ChoiceSummary
	// Rows are the flagged annotators with the most labels (at most
	// MaxFlaggedAnnotators), then the unflagged ones with the most labels
	// (at most Options.Annotators), each by labels given, most first.
	Rows []AnnotatorRow
	// FlaggedShown and OthersShown count Rows' two parts; Hidden the
	// annotators not in Rows.
	FlaggedShown, OthersShown, Hidden int64
}

// annotatorHeap is a min-heap on (Labels, -ord): its top is the first row to
// drop when an annotator with more labels comes.
type annotatorHeap []AnnotatorRow

func (h annotatorHeap) Len() int { return len(h) }
func (h annotatorHeap) Less(i, j int) bool {
	if h[i].Labels != h[j].Labels {
		return h[i].Labels < h[j].Labels
	}
	return h[i].ord > h[j].ord
}
func (h annotatorHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *annotatorHeap) Push(x any)   { *h = append(*h, x.(AnnotatorRow)) }
func (h *annotatorHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// wants reports whether a row with labels given (later than every row
// held) enters a heap of at most size rows.
func (h annotatorHeap) wants(labels int64, size int) bool {
	return size > 0 && (len(h) < size || labels > h[0].Labels)
}

// offer adds r to a heap of at most size rows.
func (h *annotatorHeap) offer(r AnnotatorRow, size int) {
	if len(*h) < size {
		heap.Push(h, r)
		return
	}
	(*h)[0] = r
	heap.Fix(h, 0)
}

// readAnnotators reads the annotators file sum names in dir in one pass:
// counts, and the flagged and the others annotators with the most labels
// (at most MaxFlaggedAnnotators and others). Memory grows with those bounds
// and the classes, not with the annotators.
func readAnnotators(ctx context.Context, dir string, sum *resultio.AnnotatorsSummary, classes, others int, mem memory.Allocator) (*AnnotatorsReport, error) {
	path := blobio.Join(dir, sum.File)
	r := &AnnotatorsReport{File: sum.File, Strength: sum.Strength, MinLabels: sum.MinLabels, Model: sum.Model, Choice: sum.Choice}
	var flagged, rest annotatorHeap
	var row int64
	err := resultio.Scan(ctx, path, mem, func(_ *resultio.File, rec arrow.RecordBatch, _ int64) error {
		c, err := annotatorCols(path, rec, classes)
		if err != nil {
			return err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			ord := row
			row++
			rowErr := func(col string, format string, args ...any) error {
				return fmt.Errorf("reportio: %s row %d column %q: %s", path, ord, col, fmt.Sprintf(format, args...))
			}
			if c.labels.IsNull(i) || c.spammer.IsNull(i) || c.adversary.IsNull(i) {
				return rowErr(annotio.ColLabels+"/"+annotio.ColSpammer+"/"+annotio.ColAdversary, "null")
			}
			labels := c.labels.Value(i)
			if labels < 0 {
				return rowErr(annotio.ColLabels, "%d labels given", labels)
			}
			a := AnnotatorRow{Labels: labels, Spammer: c.spammer.Value(i), Adversary: c.adversary.Value(i), ord: ord}
			r.Annotators++
			if a.Spammer {
				r.Spammers++
			}
			if a.Adversary {
				r.Adversaries++
			}
			if !a.Flagged() && labels < r.MinLabels {
				r.TooFew++
			}
			h, size := &rest, others
			if a.Flagged() {
				h, size = &flagged, MaxFlaggedAnnotators
			}
			if !h.wants(labels, size) {
				continue
			}
			// Only a row that enters the table costs an id string and a
			// diagonal copy.
			switch id := c.id.(type) {
			case *array.Int64:
				a.ID, a.IntID = strconv.FormatInt(id.Value(i), 10), true
			case array.StringLike:
				a.ID = validUTF8(id.Value(i))
			}
			if c.id.IsNull(i) {
				a.ID, a.IntID, a.Anonymous = "", false, true
			}
			a.Accuracy = c.accuracy.Value(i)
			if c.diag.IsNull(i) {
				return rowErr(annotio.ColDiagonal, "null")
			}
			lo, hi := c.diag.ValueOffsets(i)
			a.Diagonal = append([]float64(nil), c.diagVals.Float64Values()[lo:hi]...)
			h.offer(a, size)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if r.Annotators != sum.Annotators || r.Spammers != sum.Spammers || r.Adversaries != sum.Adversaries || r.TooFew != sum.TooFew {
		return nil, fmt.Errorf("reportio: summary.json says %d annotators, %d spammers, %d adversaries, %d with too few labels; %s holds %d, %d, %d, %d",
			sum.Annotators, sum.Spammers, sum.Adversaries, sum.TooFew, path, r.Annotators, r.Spammers, r.Adversaries, r.TooFew)
	}
	byLabels := func(x, y AnnotatorRow) int {
		if x.Labels != y.Labels {
			return cmp.Compare(y.Labels, x.Labels)
		}
		return cmp.Compare(x.ord, y.ord)
	}
	slices.SortFunc(flagged, byLabels)
	slices.SortFunc(rest, byLabels)
	r.FlaggedShown, r.OthersShown = int64(len(flagged)), int64(len(rest))
	r.Rows = append([]AnnotatorRow(flagged), rest...)
	r.Hidden = r.Annotators - int64(len(r.Rows))
	return r, nil
}

// annCols are one record batch's columns of the annotators file.
type annCols struct {
	id                 arrow.Array
	labels             *array.Int64
	accuracy           *array.Float64
	diag               *array.FixedSizeList
	diagVals           *array.Float64
	spammer, adversary *array.Boolean
}

func annotatorCols(path string, rec arrow.RecordBatch, classes int) (*annCols, error) {
	sc := rec.Schema()
	get := func(name string) (arrow.Array, error) {
		idx := sc.FieldIndices(name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("reportio: %s: no column %q: not an annotators file of relabel run", path, name)
		}
		return rec.Column(idx[0]), nil
	}
	typed := func(name, want string, arr arrow.Array, ok bool) error {
		if !ok {
			return fmt.Errorf("reportio: %s: column %q is %s, want %s", path, name, arr.DataType(), want)
		}
		return nil
	}
	c := &annCols{}
	var err error
	if c.id, err = get(annotio.ColAnnotator); err != nil {
		return nil, err
	}
	switch c.id.(type) {
	case *array.Int64, array.StringLike:
	default:
		return nil, typed(annotio.ColAnnotator, "int64 or string", c.id, false)
	}
	var arr arrow.Array
	var ok bool
	if arr, err = get(annotio.ColLabels); err != nil {
		return nil, err
	}
	if c.labels, ok = arr.(*array.Int64); !ok {
		return nil, typed(annotio.ColLabels, "int64", arr, ok)
	}
	if arr, err = get(annotio.ColAccuracy); err != nil {
		return nil, err
	}
	if c.accuracy, ok = arr.(*array.Float64); !ok {
		return nil, typed(annotio.ColAccuracy, "float64", arr, ok)
	}
	if arr, err = get(annotio.ColDiagonal); err != nil {
		return nil, err
	}
	want := fmt.Sprintf("fixed_size_list<float64>[%d] (summary.json's classes)", classes)
	if c.diag, ok = arr.(*array.FixedSizeList); !ok || c.diag.DataType().(*arrow.FixedSizeListType).Len() != int32(classes) {
		return nil, typed(annotio.ColDiagonal, want, arr, false)
	}
	if c.diagVals, ok = c.diag.ListValues().(*array.Float64); !ok {
		return nil, typed(annotio.ColDiagonal, want, arr, false)
	}
	for _, name := range []string{annotio.ColSpammer, annotio.ColAdversary} {
		if arr, err = get(name); err != nil {
			return nil, err
		}
		b, ok := arr.(*array.Boolean)
		if !ok {
			return nil, typed(name, "bool", arr, ok)
		}
		if name == annotio.ColSpammer {
			c.spammer = b
		} else {
			c.adversary = b
		}
	}
	return c, nil
}
