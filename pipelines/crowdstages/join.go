package crowdstages

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/io/annotio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/spillio"
	"github.com/relabel/relabel/pipelines/stages"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/crowd"
)

// Anonymous is the annotator key given to the labels of an item that has
// no annotations (with features, when its labels column has labels but no
// annotation names it): they are one more annotator, whose matrix is
// estimated like the others'.
const Anonymous = math.MinInt64

// ann is one annotation with its place.
type ann struct {
	key       int64
	strItem   string
	annotator int64
	label     int32
	file      string
	column    string
	row       int64
}

func (a *ann) where() string { return fmt.Sprintf("%s row %d", a.file, a.row) }

// gather flattens a bucket's AnnRows and applies the duplicate rule: an
// annotator's repeated identical labels of one item count once; two
// different labels of one item by one annotator are an error naming both
// rows. Two string ids of one key (a hash collision) are an error too. The
// result is sorted by (item key, annotator, label).
func gather(iter func(*AnnRows) bool) ([]ann, error) {
	var all []ann
	var a AnnRows
	for iter(&a) {
		for k := range a.Item {
			x := ann{key: a.Item[k], annotator: a.Annotator[k], label: a.Label[k], file: a.File, column: a.Column, row: a.Row[k]}
			if a.StrItem != nil {
				x.strItem = a.StrItem[k]
			}
			all = append(all, x)
		}
		a = AnnRows{}
	}
	slices.SortFunc(all, func(x, y ann) int {
		if c := cmp.Compare(x.key, y.key); c != 0 {
			return c
		}
		if c := cmp.Compare(x.annotator, y.annotator); c != 0 {
			return c
		}
		if c := cmp.Compare(x.label, y.label); c != 0 {
			return c
		}
		if c := cmp.Compare(x.file, y.file); c != 0 {
			return c
		}
		return cmp.Compare(x.row, y.row)
	})
	out := all[:0]
	for k := range all {
		x := &all[k]
		if len(out) > 0 {
			p := &out[len(out)-1]
			if p.key == x.key && p.strItem != x.strItem {
				return nil, &annotio.InputError{Path: x.file, Row: x.row, Column: x.column, Pkg: annotio.Pkg,
					Msg: fmt.Sprintf("ids %q and %q (at %s) have the same 64-bit key; rename one", x.strItem, p.strItem, p.where())}
			}
			if p.key == x.key && p.annotator == x.annotator {
				if p.label == x.label {
					continue // the same annotation again: counted once
				}
				return nil, &annotio.InputError{Path: x.file, Row: x.row, Column: x.column, Pkg: annotio.Pkg,
					Msg: fmt.Sprintf("item %s: its annotator gave label %d here and label %d at %s; an annotator gives an item one label", itemName(x), x.label, p.label, p.where())}
			}
		}
		out = append(out, *x)
	}
	return out, nil
}

func itemName(x *ann) string {
	if x.strItem != "" {
		return fmt.Sprintf("%q", x.strItem)
	}
	return fmt.Sprint(x.key)
}

// bucketBatchFn makes one bucket's annotations into a Batch of items (label-
// only mode): one item per id, in id order, given label = the majority of
// its annotations (ties to the lower class), posterior = the soft majority
// vote.
type bucketBatchFn struct {
	C      int
	IDKind schemas.IDKind
	Spill  spillio.Dir
}

func (f *bucketBatchFn) ProcessElement(ctx context.Context, bucket int, iter func(*AnnRows) bool, emit func(Batch)) error {
	all, err := gather(iter)
	if err != nil {
		return err
	}
	if len(all) == 0 {
		return nil
	}
	// Items in id order: by int id, or by string id.
	var starts []int
	for k := range all {
		if k == 0 || all[k].key != all[k-1].key {
			starts = append(starts, k)
		}
	}
	if f.IDKind == schemas.IDString {
		slices.SortFunc(starts, func(x, y int) int { return cmp.Compare(all[x].strItem, all[y].strItem) })
	}
	b := Batch{Items: stages.Items{Shard: resultio.BucketName(bucket), IDKind: f.IDKind, LabelOff: []int32{0}}, C: f.C, AnnOff: []int32{0}}
	n := len(starts)
	b.IDs = make([]int64, 0, n)
	b.Post = make([]float64, n*f.C)
	for i, s := range starts {
		b.IDs = append(b.IDs, all[s].key)
		if f.IDKind == schemas.IDString {
			b.StrIDs = append(b.StrIDs, all[s].strItem)
		}
		for k := s; k < len(all) && all[k].key == all[s].key; k++ {
			b.Ann = append(b.Ann, all[k].annotator)
			b.Lab = append(b.Lab, all[k].label)
		}
		b.AnnOff = append(b.AnnOff, int32(len(b.Ann)))
		_, lab := b.Item(i)
		b.Labels = append(b.Labels, schemas.GivenLabel(lab))
		b.LabelOff = append(b.LabelOff, int32(len(b.Labels)))
		crowd.MajorityInit(b.Post[i*f.C:(i+1)*f.C], lab)
	}
	itemsJoined.Inc(ctx, int64(n))
	if err := put(f.Spill, 0, &b); err != nil {
		return err
	}
	emit(b)
	return nil
}

// batchKey names a batch of stages.Items.
func batchKey(shard string, offset int64) string { return fmt.Sprintf("%s\x00%d", shard, offset) }

// itemRefsFn keys a batch of stages.Items' rows by bucket.
type itemRefsFn struct {
	Buckets int
}

func (f *itemRefsFn) ProcessElement(it stages.Items, emit func(int, ItemRefs)) {
	per := map[int]*ItemRefs{}
	var order []int
	for i, id := range it.IDs {
		b := Bucket(id, f.Buckets)
		r := per[b]
		if r == nil {
			r = &ItemRefs{Batch: batchKey(it.Shard, it.Offset), IDKind: it.IDKind}
			per[b] = r
			order = append(order, b)
		}
		r.Key = append(r.Key, id)
		r.Pos = append(r.Pos, int32(i))
		if it.StrIDs != nil {
			r.StrID = append(r.StrID, it.StrIDs[i])
		}
	}
	for _, b := range order {
		emit(b, *per[b])
	}
}

// matchFn finds the item of every annotation of one bucket and emits them
// by batch of items. An annotation of an id that no item has is an error
// naming its file and row.
type matchFn struct{}

func (f *matchFn) ProcessElement(bucket int, refs func(*ItemRefs) bool, anns func(*AnnRows) bool, emit func(string, ItemAnns)) error {
	type place struct {
		batch string
		pos   int32
		str   string
	}
	where := map[int64]place{}
	var r ItemRefs
	for refs(&r) {
		for k, key := range r.Key {
			p := place{batch: r.Batch, pos: r.Pos[k]}
			if r.StrID != nil {
				p.str = r.StrID[k]
			}
			where[key] = p
		}
		r = ItemRefs{}
	}
	all, err := gather(anns)
	if err != nil {
		return err
	}
	per := map[string]*ItemAnns{}
	var order []string
	for k := 0; k < len(all); {
		x := &all[k]
		p, ok := where[x.key]
		if !ok || p.str != x.strItem {
			return &annotio.InputError{Path: x.file, Row: x.row, Column: x.column, Pkg: annotio.Pkg,
				Msg: fmt.Sprintf("annotation of item %s, which is not in the input", itemName(x))}
		}
		ia := per[p.batch]
		if ia == nil {
			ia = &ItemAnns{Off: []int32{0}}
			per[p.batch] = ia
			order = append(order, p.batch)
		}
		ia.Pos = append(ia.Pos, p.pos)
		for ; k < len(all) && all[k].key == x.key; k++ {
			ia.Ann = append(ia.Ann, all[k].annotator)
			ia.Lab = append(ia.Lab, all[k].label)
		}
		ia.Off = append(ia.Off, int32(len(ia.Ann)))
	}
	for _, b := range order {
		emit(b, *per[b])
	}
	return nil
}

type keyItemsFn struct{}

func (keyItemsFn) ProcessElement(it stages.Items) (string, stages.Items) {
	return batchKey(it.Shard, it.Offset), it
}

// attachFn puts a batch of stages.Items together with its rows'
// annotations into a Batch. A row without annotations has its labels
// column's labels as annotations of the Anonymous annotator.
type attachFn struct {
	C     int
	Spill spillio.Dir
}

func (f *attachFn) ProcessElement(ctx context.Context, key string, items func(*stages.Items) bool, anns func(*ItemAnns) bool, emit func(Batch)) error {
	var it stages.Items
	found := 0
	var got stages.Items
	for items(&it) {
		got = it
		found++
		it = stages.Items{}
	}
	if found != 1 {
		return fmt.Errorf("crowdstages: batch %q: %d item batches, want 1", key, found)
	}
	it = got
	n := it.Len()
	type span struct {
		ann []int64
		lab []int32
	}
	per := make([]span, n)
	has := make([]bool, n)
	var a ItemAnns
	for anns(&a) {
		for k, pos := range a.Pos {
			lo, hi := a.Off[k], a.Off[k+1]
			per[pos] = span{a.Ann[lo:hi], a.Lab[lo:hi]}
			has[pos] = true
		}
		a = ItemAnns{}
	}
	b := Batch{Items: stages.Items{Shard: it.Shard, Offset: it.Offset, IDKind: it.IDKind, IDs: it.IDs, StrIDs: it.StrIDs,
		Labels: it.Labels, LabelOff: it.LabelOff, Multi: it.Multi, Cand: it.Cand, K: it.K, Neigh: it.Neigh, Weight: it.Weight},
		C: f.C, AnnOff: make([]int32, 1, n+1), Post: make([]float64, n*f.C)}
	for i := 0; i < n; i++ {
		if has[i] {
			b.Ann = append(b.Ann, per[i].ann...)
			b.Lab = append(b.Lab, per[i].lab...)
		} else {
			for _, l := range it.Labels[it.LabelOff[i]:it.LabelOff[i+1]] {
				if l >= 0 {
					b.Ann = append(b.Ann, Anonymous)
					b.Lab = append(b.Lab, l)
				}
			}
			ann, lab := b.Ann[b.AnnOff[i]:], b.Lab[b.AnnOff[i]:]
			crowd.SortAnnotations(ann, lab)
		}
		b.AnnOff = append(b.AnnOff, int32(len(b.Ann)))
		_, lab := b.Item(i)
		crowd.MajorityInit(b.Post[i*f.C:(i+1)*f.C], lab)
	}
	itemsJoined.Inc(ctx, int64(n))
	if err := put(f.Spill, 0, &b); err != nil {
		return err
	}
	emit(b)
	return nil
}

// namesFn collects the string ids of annotators.
type namesFn struct{}

func (namesFn) CreateAccumulator() Names { return Names{} }

func (namesFn) AddInput(acc Names, a AnnRows) Names {
	if a.Name == nil {
		return acc
	}
	m := Names{Key: append([]int64(nil), a.Annotator...), Name: append([]string(nil), a.Name...)}
	return mergeNames(acc, m)
}

func (namesFn) MergeAccumulators(a, b Names) Names { return mergeNames(a, b) }

func (namesFn) ExtractOutput(a Names) Names { return a }

// mergeNames merges two name lists into one sorted by key without
// repeats, recording a clash (two names of one key).
func mergeNames(a, b Names) Names {
	type kv struct {
		k int64
		n string
	}
	all := make([]kv, 0, len(a.Key)+len(b.Key))
	for i := range a.Key {
		all = append(all, kv{a.Key[i], a.Name[i]})
	}
	for i := range b.Key {
		all = append(all, kv{b.Key[i], b.Name[i]})
	}
	slices.SortFunc(all, func(x, y kv) int {
		if c := cmp.Compare(x.k, y.k); c != 0 {
			return c
		}
		return cmp.Compare(x.n, y.n)
	})
	out := Names{Clash: cmp.Or(a.Clash, b.Clash)}
	for i, x := range all {
		if i > 0 && x.k == all[i-1].k {
			if x.n != all[i-1].n && out.Clash == "" {
				out.Clash = fmt.Sprintf("annotators %q and %q have the same 64-bit key; rename one", all[i-1].n, x.n)
			}
			continue
		}
		out.Key = append(out.Key, x.k)
		out.Name = append(out.Name, x.n)
	}
	return out
}

var itemsJoined = beam.NewCounter("relabel", "crowd_items")

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*bucketBatchFn)(nil)).Elem())
	register.Iter1[AnnRows]()
	register.Emitter1[Batch]()
	beam.RegisterDoFn(reflect.TypeOf((*itemRefsFn)(nil)).Elem())
	register.Emitter2[int, ItemRefs]()
	beam.RegisterDoFn(reflect.TypeOf((*matchFn)(nil)).Elem())
	register.Iter1[ItemRefs]()
	register.Emitter2[string, ItemAnns]()
	beam.RegisterDoFn(reflect.TypeOf((*keyItemsFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*attachFn)(nil)).Elem())
	register.Iter1[stages.Items]()
	register.Iter1[ItemAnns]()
	beam.RegisterDoFn(reflect.TypeOf((*namesFn)(nil)).Elem())
}
