package ivfstages

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/pipelines/stages"
	"github.com/relabel/relabel/transforms/mixture"
)

// unblockFn sends each item of a block back towards the input batch it came
// from: one BatchItems per (shard, batch offset), keyed by both. With Spill
// on, the block's BatchItems go into one file of generation Gen and only
// their references pass the shuffle.
type unblockFn struct {
	Spill Spill
	Gen   int
}

func (f unblockFn) ProcessElement(b Block, emit func(string, BatchItems)) error {
	batches, out, err := f.unblock(b)
	if err != nil {
		return err
	}
	for i := range out {
		emit(batches[i], out[i])
	}
	return nil
}

// unblock returns the items of b grouped by input batch and each group's
// batch key, in the order ProcessElement emits them; with f.Spill on, the
// batches' items in a file and one reference per group of batches, keyed
// by the group (putBatchGroups). It is safe to call on several blocks at
// once (localRoundsFn does, and emits in block order).
func (f unblockFn) unblock(b Block) ([]string, []BatchItems, error) {
	if err := b.unspill(); err != nil {
		return nil, nil, err
	}
	type origin struct {
		src    int32
		offset int64
	}
	groups := map[origin][]int{}
	for i := range b.Keys {
		o := origin{b.Src[i], b.Offset[i]}
		groups[o] = append(groups[o], i)
	}
	keys := slices.SortedFunc(maps.Keys(groups), func(x, y origin) int {
		return cmp.Or(cmp.Compare(b.Shards[x.src], b.Shards[y.src]), cmp.Compare(x.offset, y.offset))
	})
	out := make([]BatchItems, 0, len(keys))
	for _, o := range keys {
		idx := groups[o]
		r := BatchItems{Row: make([]int32, len(idx))}
		it := &r.Items
		it.Shard, it.Offset, it.IDKind, it.Multi = b.Shards[o.src], o.offset, b.IDKind, b.Multi
		it.LabelOff = []int32{0}
		it.State.Reset()
		for a, i := range idx {
			r.Row[a] = b.Row[i]
			it.IDs = append(it.IDs, b.Keys[i])
			if b.StrIDs != nil {
				it.StrIDs = append(it.StrIDs, b.StrIDs[i])
			}
			it.Labels = append(it.Labels, b.Labels[b.LabelOff[i]:b.LabelOff[i+1]]...)
			it.LabelOff = append(it.LabelOff, int32(len(it.Labels)))
			appendPosterior(&it.State, &b.State, i)
		}
		out = append(out, r)
	}
	// The keys come from the items, before spilling replaces them.
	batches := make([]string, len(out))
	for i := range out {
		batches[i] = batchKey(out[i].Items.Shard, out[i].Items.Offset)
	}
	if f.Spill.On() {
		return f.Spill.putBatchGroups(f.Gen, b.Key, batches, out)
	}
	return batches, out, nil
}

// appendPosterior packs item i of src into dst without its transition rows
// (each class gets an empty row with remainder 1): the output needs only pi
// (ToCleaned), and the rows are most of a state's bytes.
func appendPosterior(dst, src *mixture.States, i int) {
	if len(dst.ItemOff) == 0 {
		dst.Reset()
	}
	for e := src.ItemOff[i]; e < src.ItemOff[i+1]; e++ {
		dst.Class = append(dst.Class, src.Class[e])
		dst.Pi = append(dst.Pi, src.Pi[e])
		dst.Rem = append(dst.Rem, 1)
		dst.RowOff = append(dst.RowOff, int32(len(dst.Cat)))
	}
	dst.ItemOff = append(dst.ItemOff, int32(len(dst.Class)))
}

func batchKey(shard string, offset int64) string {
	return shard + "\\x00" + strconv.FormatInt(offset, 10)
}

// rebatchFn reassembles one input batch, in row order, as the Items the
// writer takes.
type rebatchFn struct{}

func (rebatchFn) ProcessElement(key string, iter func(*BatchItems) bool, emit func(stages.Items)) error {
	return rebatchItems(iter, emit)
}

// rebatchSpillFn is rebatchFn that hands the writer its batch in a spill
// file of generation genWrite (stages.SpilledItems says why).
type rebatchSpillFn struct {
	Spill Spill
}

// Its input is a group of batches (putBatchGroups): spilled elements hold
// several batches' items, inline ones one batch's; it reassembles each
// batch of the group in turn, in batch key order.
func (f *rebatchSpillFn) ProcessElement(key string, iter func(*BatchItems) bool, emit func(stages.SpilledItems)) error {
	byBatch := map[string][]BatchItems{}
	var r BatchItems
	for iter(&r) {
		rs := []BatchItems{r}
		if r.Spilled.Path != "" {
			var err error
			if rs, err = loadBatchGroup(r.Spilled); err != nil {
				return err
			}
		}
		for _, x := range rs {
			k := batchKey(x.Items.Shard, x.Items.Offset)
			byBatch[k] = append(byBatch[k], x)
		}
		r = BatchItems{}
	}
	var err error
	for _, k := range slices.Sorted(maps.Keys(byBatch)) {
		rerr := rebatchItems(stages.IterOf(byBatch[k]), func(it stages.Items) {
			var refs []spillRef
			refs, err = f.Spill.write(genWrite, batchName('w', it.Shard, it.Offset), stages.EncodeItems(it))
			if err == nil {
				emit(stages.SpilledItems{Shard: it.Shard, Ref: refs[0]})
			}
		})
		if err = cmp.Or(rerr, err); err != nil {
			return err
		}
		delete(byBatch, k)
	}
	return nil
}

func rebatchItems(iter func(*BatchItems) bool, emit func(stages.Items)) error {
	var parts []BatchItems
	var r BatchItems
	for iter(&r) {
		if r.Spilled.Path != "" {
			return fmt.Errorf("ivfstages: batch %s: a group's posteriors in %s, where one batch's inline were expected", r.Items.Shard, r.Spilled.Path)
		}
		parts = append(parts, r)
		r = BatchItems{}
	}
	n := 0
	for _, r := range parts {
		n += len(r.Row)
	}
	if len(parts) == 0 {
		return nil
	}
	type ref struct{ p, i int32 }
	pos := make([]ref, n)
	seen := make([]bool, n)
	for p := range parts {
		for i, row := range parts[p].Row {
			if int(row) >= n || seen[row] {
				return fmt.Errorf("ivfstages: batch %s: row %d missing or repeated", parts[p].Items.Shard, row)
			}
			seen[row] = true
			pos[row] = ref{int32(p), int32(i)}
		}
	}
	f := &parts[0].Items
	out := stages.Items{Shard: f.Shard, Offset: f.Offset, IDKind: f.IDKind, Multi: f.Multi,
		IDs: make([]int64, n), LabelOff: make([]int32, 1, n+1)}
	out.State = mixture.States{}
	out.State.Reset()
	for row, rf := range pos {
		it := &parts[rf.p].Items
		out.IDs[row] = it.IDs[rf.i]
		if it.StrIDs != nil {
			out.StrIDs = append(out.StrIDs, it.StrIDs[rf.i])
		}
		out.Labels = append(out.Labels, it.Labels[it.LabelOff[rf.i]:it.LabelOff[rf.i+1]]...)
		out.LabelOff = append(out.LabelOff, int32(len(out.Labels)))
		out.State.AppendFrom(&it.State, int(rf.i))
	}
	emit(out)
	return nil
}

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*unblockFn)(nil)).Elem())
	register.Emitter2[string, BatchItems]()
	beam.RegisterDoFn(reflect.TypeOf((*rebatchFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*rebatchSpillFn)(nil)).Elem())
	register.Emitter1[stages.SpilledItems]()
	register.Iter1[BatchItems]()
}
