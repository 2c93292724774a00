package reportio

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

// Fixed bin counts of the accumulators: the report's memory does not grow
// with the rows.
const (
	// HistBins bins given_label_prob in [0, 1] for the histogram.
	HistBins = 20
	// RelBins bins clean_prob in [0, 1] for the reliability diagram.
	RelBins = 10
	// detBins bins given_label_prob finely for detection precision/recall
	// at thresholds that are multiples of 1/detBins.
	detBins = 100
	// topPosterior is how many posterior entries a suspect keeps.
	topPosterior = 3
)

// ClassProb is one posterior entry.
type ClassProb struct {
	Class int32
	Prob  float32
}

// Suspect is one of the likeliest wrong labels: a labelled row with a low
// given_label_prob.
type Suspect struct {
	ID string
	// IntID is true when ID is an int64 id (the table sorts it as a number).
	IntID bool
	// Given holds the given label's class (the annotations when several).
	Given     []int32
	Clean     int32
	GivenProb float32
	CleanProb float32
	Posterior []ClassProb
	// Truth is the true class, -1 when no truth was given or it lacks the id.
	Truth int32
	ord   int64 // row number in the pass: ties keep the earlier row
}

// suspectHeap is a max-heap on (GivenProb, ord): its top is the first row to
// drop when a likelier wrong label comes.
type suspectHeap []Suspect

func (h suspectHeap) Len() int { return len(h) }
func (h suspectHeap) Less(i, j int) bool {
	if h[i].GivenProb != h[j].GivenProb {
		return h[i].GivenProb > h[j].GivenProb
	}
	return h[i].ord > h[j].ord
}
func (h suspectHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *suspectHeap) Push(x any)   { *h = append(*h, x.(Suspect)) }
func (h *suspectHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// accum holds everything the pass counts.
type accum struct {
	c       int
	classes *shardio.ClassMap
	top     int
	truth   Truth

	rows, labelled, changed int64
	unresolved              int64   // rows with a null clean_label
	given, clean            []int64 // rows by given (majority) / clean class
	changedFrom, changedTo  []int64
	sumGivenProb            []float64
	// pairs counts changed rows by (given, clean): dense when C*C is small,
	// else a map (at most one entry per changed row).
	pairs    []int64
	pairMap  map[[2]int32]int64
	hist     [2][HistBins]int64 // [unchanged, changed]
	suspects suspectHeap
	ord      int64

	t truthCounts
}

// truthCounts are the counts against the truth.
type truthCounts struct {
	rows, missing           int64 // labelled rows with / without a true label
	givenRight, cleanRight  int64
	changedWrong, changedOK int64 // changed rows whose given label was wrong / right
	rel                     [RelBins]struct {
		n, right int64
		sumProb  float64
	}
	det [detBins][2]int64 // by given_label_prob bin: [given right, given wrong]
}

// denseLimit is the largest C*C kept as a dense pair table.
const denseLimit = 1 << 20

func newAccum(c int, names []string, top int, truth Truth) (*accum, error) {
	a := &accum{
		c: c, top: top, truth: truth,
		given: make([]int64, c), clean: make([]int64, c),
		changedFrom: make([]int64, c), changedTo: make([]int64, c),
		sumGivenProb: make([]float64, c),
	}
	// summary.json's classes bound integer labels; its names map strings.
	var err error
	if a.classes, err = shardio.NewClassMap(names, c); err != nil {
		return nil, fmt.Errorf("reportio: summary.json: %w", err)
	}
	if c*c <= denseLimit {
		a.pairs = make([]int64, c*c)
	} else {
		a.pairMap = map[[2]int32]int64{}
	}
	return a, nil
}

// readShard streams one output shard through a, one unit at a time
// (resultio.Scan).
func (a *accum) readShard(ctx context.Context, path string, mem memory.Allocator) error {
	return resultio.Scan(ctx, path, mem, func(_ *resultio.File, rec arrow.RecordBatch, row int64) error {
		return a.addBatch(path, row, rec)
	})
}

// cols are one record batch's output columns.
type cols struct {
	id, given, clean, cleanProb, givenProb arrow.Array
	changed                                *array.Boolean
	post                                   *array.List
	postClass                              arrow.Array
	postProb                               *array.Float32
	multi                                  bool
}

func findCols(path string, rec arrow.RecordBatch) (*cols, error) {
	sc := rec.Schema()
	get := func(name string) (arrow.Array, bool) {
		idx := sc.FieldIndices(name)
		if len(idx) != 1 {
			return nil, false
		}
		return rec.Column(idx[0]), true
	}
	need := func(name string) (arrow.Array, error) {
		c, ok := get(name)
		if !ok {
			return nil, fmt.Errorf("reportio: %s: no column %q: not an output of relabel run", path, name)
		}
		return c, nil
	}
	c := &cols{}
	var err error
	if c.id, err = need(schemas.ColID); err != nil {
		return nil, err
	}
	if g, ok := get(schemas.ColLabels); ok {
		if _, isList := g.(array.ListLike); !isList {
			return nil, fmt.Errorf("reportio: %s: column %q is %s, want a list of labels", path, schemas.ColLabels, g.DataType())
		}
		c.given, c.multi = g, true
	} else if c.given, err = need(schemas.ColLabel); err != nil {
		return nil, err
	}
	if c.clean, err = need(schemas.ColCleanLabel); err != nil {
		return nil, err
	}
	if c.cleanProb, err = need(schemas.ColCleanProb); err != nil {
		return nil, err
	}
	if c.givenProb, err = need(schemas.ColGivenLabelProb); err != nil {
		return nil, err
	}
	for _, f := range []arrow.Array{c.cleanProb, c.givenProb} {
		if _, ok := f.(*array.Float32); !ok {
			return nil, fmt.Errorf("reportio: %s: a probability column is %s, want float32", path, f.DataType())
		}
	}
	ch, err := need(schemas.ColChanged)
	if err != nil {
		return nil, err
	}
	var ok bool
	if c.changed, ok = ch.(*array.Boolean); !ok {
		return nil, fmt.Errorf("reportio: %s: column %q is %s, want bool", path, schemas.ColChanged, ch.DataType())
	}
	if p, found := get(schemas.ColPosterior); found {
		l, ok := p.(*array.List)
		if !ok {
			return nil, fmt.Errorf("reportio: %s: column %q is %s, want a list of (class, prob)", path, schemas.ColPosterior, p.DataType())
		}
		st, ok := l.ListValues().(*array.Struct)
		if !ok || st.NumField() != 2 {
			return nil, fmt.Errorf("reportio: %s: column %q is %s, want a list of (class, prob)", path, schemas.ColPosterior, p.DataType())
		}
		c.post, c.postClass = l, st.Field(0)
		if c.postProb, ok = st.Field(1).(*array.Float32); !ok {
			return nil, fmt.Errorf("reportio: %s: column %q: prob is %s, want float32", path, schemas.ColPosterior, st.Field(1).DataType())
		}
	}
	return c, nil
}

// labeler maps the label values of arr to class indices (shardio's
// ClassMap); the caller checks nulls.
func (a *accum) labeler(arr arrow.Array) (func(j int) (int32, error), error) {
	l, err := a.classes.Labeler(arr)
	if err != nil {
		return nil, fmt.Errorf("%v, want int32, int64 or string labels", err)
	}
	return func(j int) (int32, error) {
		v, bad := l(j)
		if bad != "" {
			return 0, errors.New(bad)
		}
		return v, nil
	}, nil
}

// addBatch counts one record batch whose first row is row of path.
func (a *accum) addBatch(path string, row int64, rec arrow.RecordBatch) error {
	c, err := findCols(path, rec)
	if err != nil {
		return err
	}
	cleanProb := c.cleanProb.(*array.Float32)
	givenProb := c.givenProb.(*array.Float32)
	rowErr := func(i int, col string, err error) error {
		return fmt.Errorf("reportio: %s row %d column %q: %w", path, row+int64(i), col, err)
	}
	var given []int32
	givenCol, givenVals := schemas.ColLabel, c.given
	if c.multi {
		givenCol, givenVals = schemas.ColLabels, c.given.(array.ListLike).ListValues()
	}
	givenLab, err := a.labeler(givenVals)
	if err != nil {
		return rowErr(0, givenCol, err)
	}
	cleanLab, err := a.labeler(c.clean)
	if err != nil {
		return rowErr(0, schemas.ColCleanLabel, err)
	}
	var postLab func(int) (int32, error)
	if c.post != nil {
		if postLab, err = a.labeler(c.postClass); err != nil {
			return rowErr(0, schemas.ColPosterior, err)
		}
	}
	addGiven := func(j int) error {
		if givenVals.IsNull(j) {
			return nil
		}
		v, err := givenLab(j)
		given = append(given, v)
		return err
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		a.rows++
		ord := a.ord
		a.ord++
		// The given label: the one label, or the majority annotation
		// (schemas.GivenLabel, the rule the run's given_label_prob uses).
		given = given[:0]
		if c.multi {
			l := c.given.(array.ListLike)
			if !l.IsNull(i) {
				lo, hi := l.ValueOffsets(i)
				for j := lo; j < hi; j++ {
					if err := addGiven(int(j)); err != nil {
						return rowErr(i, givenCol, err)
					}
				}
			}
		} else if err := addGiven(i); err != nil {
			return rowErr(i, givenCol, err)
		}
		g := schemas.GivenLabel(given)
		cl := int32(-1)
		if c.clean.IsValid(i) {
			if cl, err = cleanLab(i); err != nil {
				return rowErr(i, schemas.ColCleanLabel, err)
			}
		}
		if cl < 0 {
			// Null: an unlabelled row no labelled row reached. A labelled
			// row always has a clean label.
			if g >= 0 {
				return rowErr(i, schemas.ColCleanLabel, fmt.Errorf("null clean label on a labelled row"))
			}
			if c.changed.IsValid(i) && c.changed.Value(i) {
				return rowErr(i, schemas.ColChanged, fmt.Errorf("a row without a clean label marked changed"))
			}
			a.unresolved++
			continue
		}
		cp := cleanProb.Value(i)
		if cleanProb.IsNull(i) || !(cp >= 0 && cp <= 1+1e-5) {
			return rowErr(i, schemas.ColCleanProb, fmt.Errorf("%v is not a probability", cp))
		}
		ch := c.changed.IsValid(i) && c.changed.Value(i)
		a.clean[cl]++
		if ch {
			a.changed++
			a.changedTo[cl]++
		}
		if g < 0 {
			if ch {
				return rowErr(i, schemas.ColChanged, fmt.Errorf("an unlabelled row marked changed"))
			}
			continue
		}
		gp := givenProb.Value(i)
		if givenProb.IsNull(i) || !(gp >= 0 && gp <= 1+1e-5) {
			return rowErr(i, schemas.ColGivenLabelProb, fmt.Errorf("%v is not a probability of a labelled row", gp))
		}
		gp, cp = min(gp, 1), min(cp, 1)
		a.labelled++
		a.given[g]++
		a.sumGivenProb[g] += float64(gp)
		chi := 0
		if ch {
			chi = 1
			a.changedFrom[g]++
			if a.pairs != nil {
				a.pairs[int(g)*a.c+int(cl)]++
			} else {
				a.pairMap[[2]int32{g, cl}]++
			}
		}
		a.hist[chi][min(int(gp*HistBins), HistBins-1)]++

		truth := int32(-1)
		if a.truth != nil {
			var id resultio.Key
			id, err = keyOf(c.id, i)
			if err != nil {
				return rowErr(i, schemas.ColID, err)
			}
			if t, ok := a.truth(id); ok {
				if t < 0 || int(t) >= a.c {
					return fmt.Errorf("reportio: truth of id %s is %d, outside [0,%d)", id, t, a.c)
				}
				truth = t
				a.addTruth(g, cl, t, gp, cp, ch)
			} else {
				a.t.missing++
			}
		}

		// The bounded heap of suspects: only a row that beats the current
		// top costs an id string and a posterior copy.
		if a.top > 0 && (len(a.suspects) < a.top || gp < a.suspects[0].GivenProb) {
			s := Suspect{Given: append([]int32(nil), given...), Clean: cl, GivenProb: gp, CleanProb: cp, Truth: truth, ord: ord}
			switch x := c.id.(type) {
			case *array.Int64:
				s.ID, s.IntID = strconv.FormatInt(x.Value(i), 10), true
			case array.StringLike:
				s.ID = validUTF8(x.Value(i))
			default:
				return rowErr(i, schemas.ColID, fmt.Errorf("ids of type %s, want int64 or string", c.id.DataType()))
			}
			if c.post != nil && c.post.IsValid(i) {
				lo, hi := c.post.ValueOffsets(i)
				for j := lo; j < hi && j < lo+topPosterior; j++ {
					k := int32(-1)
					if c.postClass.IsValid(int(j)) {
						if k, err = postLab(int(j)); err != nil {
							return rowErr(i, schemas.ColPosterior, err)
						}
					}
					s.Posterior = append(s.Posterior, ClassProb{k, c.postProb.Value(int(j))})
				}
			}
			if len(a.suspects) < a.top {
				heap.Push(&a.suspects, s)
			} else {
				a.suspects[0] = s
				heap.Fix(&a.suspects, 0)
			}
		}
	}
	return nil
}

func (a *accum) addTruth(g, cl, t int32, gp, cp float32, changed bool) {
	tc := &a.t
	tc.rows++
	wrong := g != t
	if !wrong {
		tc.givenRight++
	}
	if cl == t {
		tc.cleanRight++
	}
	if changed {
		if wrong {
			tc.changedWrong++
		} else {
			tc.changedOK++
		}
	}
	b := min(int(cp*RelBins), RelBins-1)
	tc.rel[b].n++
	tc.rel[b].sumProb += float64(cp)
	if cl == t {
		tc.rel[b].right++
	}
	w := 0
	if wrong {
		w = 1
	}
	tc.det[min(int(gp*detBins), detBins-1)][w]++
}

// keyOf reads row i's id.
func keyOf(arr arrow.Array, i int) (resultio.Key, error) {
	if arr.IsNull(i) {
		return resultio.Key{}, fmt.Errorf("null id")
	}
	switch x := arr.(type) {
	case *array.Int64:
		return resultio.Key{Int: x.Value(i)}, nil
	case array.StringLike:
		return resultio.Key{Str: x.Value(i), IsStr: true}, nil
	}
	return resultio.Key{}, fmt.Errorf("ids of type %s, want int64 or string", arr.DataType())
}

// validUTF8 is s with each run of bytes that is not UTF-8 replaced by U+FFFD:
// the page and the terminal get valid text even from an output edited by
// hand (relabel run refuses such ids and names in its input).
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
