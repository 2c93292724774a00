package ivfstages

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"runtime"
	"slices"
	"sort"

	"golang.org/x/exp/mmap"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/gpu"
	"github.com/relabel/relabel/io/keptio"
	"github.com/relabel/relabel/pipelines/stages"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/schemas/wire"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/ivf"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
	"github.com/relabel/relabel/transforms/mixture"
)

// BlockKey is the shuffle key of block b of partition p.
func BlockKey(p, b int32) int64 { return int64(p)<<24 | int64(b) }

// maxBlocks bounds a partition's blocks so that BlockKey stays unique.
const maxBlocks = 1 << 24

// probeFn standardises a batch and finds every item's NProbe nearest
// partitions and the block of its home partition (the nearest) it will be
// searched in.
type probeFn struct {
	NProbe      int
	Standardise bool
	// Keep: see Params.Keep.
	Keep string

	cent *float32
	idx  knn.Index
	res  knn.Result
}

func (f *probeFn) Teardown() {
	if f.idx != nil {
		f.idx.Close()
	}
}

func (f *probeFn) ProcessElement(ctx context.Context, r schemas.Rows, st stages.Stats, m ivf.Model, emit func(Probed)) error {
	if m.P() == 0 {
		return errors.New("ivfstages: empty partitioning")
	}
	// Side inputs are decoded once per bundle: index the centroids once.
	if f.idx == nil || f.cent != &m.Centroids[0] {
		if f.idx != nil {
			f.idx.Close()
		}
		idx, err := m.Index(knn.CPU{})
		if err != nil {
			return fmt.Errorf("ivfstages: %w", err)
		}
		f.idx, f.cent = idx, &m.Centroids[0]
	}
	n, d := r.Len(), r.D
	x := stages.Standardised(&r, &st, f.Standardise)
	np := min(f.NProbe, m.P())
	if err := f.idx.Search(&f.res, knn.Matrix{Rows: n, Cols: d, Data: x}, nil, np); err != nil {
		return fmt.Errorf("ivfstages: %s rows %d..%d: ivf probe: %w", r.Shard, r.Offset, r.Offset+int64(n), err)
	}
	out := Probed{NProbe: np, Probe: append([]int32(nil), f.res.Index...), Block: make([]int32, n), Rows: r}
	out.Rows.Features = x
	for i := 0; i < n; i++ {
		out.Block[i] = m.Block(out.Probe[i*np], r.IDs[i])
	}
	if f.Keep != "" {
		if err := keptio.WriteIVFBatch(ctx, f.Keep, r.Shard, r.Offset, r.IDs, np, out.Probe); err != nil {
			return err
		}
	}
	emit(out)
	return nil
}

// emitFn sends the items of a probed batch to the blocks of one wave's
// partitions (p % Waves == Wave): to every block of each of its probed
// partitions as a stored item, and to its home block as a searched one, one
// Part per destination block. The side input, the previous wave's
// blocks (or the model, for the first), only orders the waves: Prism holds
// one wave's copies at a time. dup (the first duplicate id, "" if none) fails
// the run here, before any search: this stage waits on side inputs anyway, and
// the search stage must not (see searchFn). With a spill directory the
// parts go to files instead and the shuffle carries references
// (emitRefsFn).
type emitFn struct {
	Wave, Waves int
}

func (f *emitFn) ProcessElement(pr Probed, m ivf.Model, dup string, _ func(*int64) bool, emit func(int64, Part)) error {
	keys, out, err := f.build(pr, m, dup, false)
	if err != nil {
		return err
	}
	for i, k := range keys {
		emit(k, out[i])
	}
	return nil
}

// build makes the parts of pr for the blocks of wave f.Wave, by block key
// ascending; byRow gives each stored item's row in the batch (Part.At)
// instead of a copy of its features (Part.X). Within a part the items are
// in row order.
//
// The parts' slices are windows of one array per field, filled after a
// count per block, not slices grown item by item in a map of parts: at
// 20,000 partitions a batch of 16,384 rows makes about as many parts of a
// few items each, and growing each part's fields cost allocations per part.
func (f *emitFn) build(pr Probed, m ivf.Model, dup string, byRow bool) ([]int64, []Part, error) {
	if dup != "" {
		return nil, nil, errors.New(dupMessage(dup))
	}
	r := &pr.Rows
	n, d, np := r.Len(), r.D, pr.NProbe
	// base[p] numbers partition p's blocks densely, in block key order.
	base := make([]int32, m.P()+1)
	for p, b := range m.Blocks {
		base[p+1] = base[p] + b
	}
	// dest calls each for every (row, partition, block) of this wave, and
	// says whether the block is the row's home (where it is searched).
	dest := func(each func(i int, p, b int32, home bool)) {
		for i := 0; i < n; i++ {
			probes := pr.Probe[i*np : (i+1)*np]
			for _, p := range probes {
				if int(p)%f.Waves != f.Wave {
					continue
				}
				for b := int32(0); b < m.Blocks[p]; b++ {
					each(i, p, b, p == probes[0] && b == pr.Block[i])
				}
			}
		}
	}
	// Items, labels and searched items per block.
	count := make([]int32, base[m.P()])
	labels := make([]int32, base[m.P()])
	searched := make([]int32, base[m.P()])
	total, totalLabels, totalSearched := 0, 0, 0
	dest(func(i int, p, b int32, home bool) {
		x := base[p] + b
		nl := r.LabelOff[i+1] - r.LabelOff[i]
		count[x]++
		labels[x] += nl
		total++
		totalLabels += int(nl)
		if home {
			searched[x]++
			totalSearched++
		}
	})
	var keys []int64
	var parts []Part
	// Block x's part is parts[slot[x]].
	slot := make([]int32, len(count))
	keysA, homeA := make([]int64, total), make([]int64, total)
	var atA []int32
	var xA []float32
	if byRow {
		atA = make([]int32, total)
	} else {
		xA = make([]float32, total*d)
	}
	labelsA := make([]int32, totalLabels)
	offA := make([]int32, total+len(count))
	qA, rowA := make([]int32, totalSearched), make([]int32, totalSearched)
	var strA []string
	if r.IDKind == schemas.IDString {
		strA = make([]string, totalSearched)
	}
	var at, lat, sat, oat int32
	for p := 0; p < m.P(); p++ {
		for b := int32(0); b < m.Blocks[p]; b++ {
			x := base[p] + b
			if count[x] == 0 {
				continue
			}
			slot[x] = int32(len(parts))
			c, l, q := count[x], labels[x], searched[x]
			pt := Part{D: d, Shard: r.Shard, Offset: r.Offset, IDKind: r.IDKind, Multi: r.Multi,
				Keys: keysA[at : at : at+c], Home: homeA[at : at : at+c],
				LabelOff: offA[oat : oat+1 : oat+1+c]}
			if l > 0 {
				// Unlabelled items only: nil, as appending nothing leaves it.
				pt.Labels = labelsA[lat : lat : lat+l]
			}
			if byRow {
				pt.At = atA[at : at : at+c]
			} else {
				pt.X = xA[int(at)*d : int(at)*d : int(at+c)*d]
			}
			if q > 0 {
				pt.Q, pt.Row = qA[sat:sat:sat+q], rowA[sat:sat:sat+q]
				if strA != nil {
					pt.StrIDs = strA[sat : sat : sat+q]
				}
			}
			keys = append(keys, BlockKey(int32(p), b))
			parts = append(parts, pt)
			at, lat, sat, oat = at+c, lat+l, sat+q, oat+1+c
		}
	}
	dest(func(i int, p, b int32, home bool) {
		pt := &parts[slot[base[p]+b]]
		if home {
			pt.Q = append(pt.Q, int32(len(pt.Keys)))
			pt.Row = append(pt.Row, int32(i))
			if strA != nil {
				pt.StrIDs = append(pt.StrIDs, r.StrIDs[i])
			}
		}
		pt.Labels = append(pt.Labels, r.Labels[r.LabelOff[i]:r.LabelOff[i+1]]...)
		pt.LabelOff = append(pt.LabelOff, int32(len(pt.Labels)))
		pt.Keys = append(pt.Keys, r.IDs[i])
		pt.Home = append(pt.Home, BlockKey(pr.Probe[i*np], pr.Block[i]))
		if byRow {
			pt.At = append(pt.At, int32(i))
		} else {
			pt.X = append(pt.X, r.Features[i*d:(i+1)*d]...)
		}
	})
	return keys, parts, nil
}

// modelTokenFn is the first wave's order token: the model is ready.
type modelTokenFn struct{}

func (modelTokenFn) ProcessElement(_ ivf.Model, emit func(int64)) { emit(0) }

// searchFn searches one block: its home items against every item stored
// in its partition (exact batched kNN, the item itself excluded), weights the
// neighbours (LLC, with the stored features at hand), and emits the block
// with initial states. Stored and searched items are sorted by key first, so
// the output does not depend on the order the shuffle delivered the parts.
//
// It reads no side input, on purpose: Prism (v2.77) reschedules a stage
// that has side inputs in a tight loop for as long as one of its bundles
// runs (an ordinary stage with nothing pending still reports itself
// schedulable), so a long search or round in such a stage kept one of two
// cores busy doing nothing (a quarter of a run's CPU; docs/PERFORMANCE.md).
//
// Prism runs the search's elements one after another in one bundle, and a
// block (about 500 items) is too small a search to spread over many cores:
// on 16 cores the search of fashion ran at 2-3 cores busy for a third of the
// run, and the million-row search at 1-7 for 27 s (docs/PERFORMANCE.md, issue
// 37). So the CPU search keeps up to GOMAXPROCS blocks in flight inside its
// bundle, each on a goroutine with its own buffers, and emits them (and
// spills them) in the order they arrived: the same elements in the same
// order, the same bytes. The GPU search keeps one, as before.
type searchFn struct {
	P engine.NeighbourParams
	// Spill: see Spill; the blocks go to a file each.
	Spill Spill
	// Features keeps the searched items' features in their block (Block.X)
	// for the linear head (Params.Features).
	Features bool

	searcher knn.Searcher
	coder    llc.Coder

	// pending are the bundle's searches in flight, oldest first; free are
	// the buffers of finished ones. The SDK harness never reuses a DoFn
	// instance whose bundle failed, so a bundle starts with none pending.
	pending []*pendingSearch
	free    []*searchWork
}

// searchWork is one in-flight search's buffers.
type searchWork struct {
	res knn.Result
	wb  engine.WeightBuffer
}

// pendingSearch is one block's search, running in the background; done is
// closed when b, ok and err are set.
type pendingSearch struct {
	done chan struct{}
	ws   *searchWork
	b    Block
	ok   bool // false: the block has no queries and emits nothing
	err  error
}

func (f *searchFn) Setup() error {
	var err error
	f.searcher, f.coder, _, err = gpu.Backends(f.P.Device)
	if cpu, ok := f.searcher.(knn.CPU); ok && cpu.QueryBlock == 0 {
		cpu.QueryBlock = searchQueryBlock
		f.searcher = cpu
	}
	return err
}

// searchQueryBlock is the CPU search's query tile in a block. knn.CPU
// spreads a search over its query tiles, and a block holds about
// ivf.DefaultPartitionSize (500) items: with the default tile of 512 every
// block's kNN ran on one goroutine, and while the embedded runner ran the
// search in one bundle (it splits a bundle only when it sees no progress,
// and blocks finish every few tens of milliseconds) one core of two sat
// idle for 6-12 s of the million-row run (docs/PERFORMANCE.md). Two tiles
// of 256 keep two cores busy; the packing of the stored items' tiles, done
// once per query tile, costs a little more. A constant, not one derived
// from the core count: the OpenBLAS build's sums depend on the tile shape,
// and the output must not depend on the machine.
const searchQueryBlock = 256

type storedRef struct {
	part, i int32
}

func (f *searchFn) ProcessElement(ctx context.Context, key int64, iter func(*Part) bool, emit func(Block), done func(int64)) error {
	var parts []Part
	var p Part
	for iter(&p) {
		parts = append(parts, p)
		p = Part{}
	}
	return f.start(key, parts, emit, done)
}

// start searches block key (its parts) in the background, once fewer than
// inFlight searches are pending, and emits what has finished at the head.
func (f *searchFn) start(key int64, parts []Part, emit func(Block), done func(int64)) error {
	if len(parts) == 0 {
		return nil
	}
	for len(f.pending) >= f.inFlight() {
		if err := f.emitOldest(emit, done); err != nil {
			return err
		}
	}
	ws := &searchWork{}
	if n := len(f.free); n > 0 {
		ws, f.free = f.free[n-1], f.free[:n-1]
	}
	ps := &pendingSearch{done: make(chan struct{}), ws: ws}
	f.pending = append(f.pending, ps)
	go func() {
		defer close(ps.done)
		ps.b, ps.ok, ps.err = f.search(ws, key, parts)
	}()
	// Emit what has finished at the head, without waiting for the rest.
	for len(f.pending) > 0 && finished(f.pending[0]) {
		if err := f.emitOldest(emit, done); err != nil {
			return err
		}
	}
	return nil
}

// FinishBundle emits the bundle's searches still in flight, in order.
func (f *searchFn) FinishBundle(_ context.Context, emit func(Block), done func(int64)) error {
	for len(f.pending) > 0 {
		if err := f.emitOldest(emit, done); err != nil {
			return err
		}
	}
	return nil
}

// inFlight is how many of a bundle's blocks are searched at once: the CPU
// search one per P; another backend one (its kernels queue on the device).
func (f *searchFn) inFlight() int {
	if _, ok := f.searcher.(knn.CPU); ok {
		return max(1, runtime.GOMAXPROCS(0))
	}
	return 1
}

func finished(p *pendingSearch) bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// emitOldest waits for the oldest search in flight, spills and emits its
// block.
func (f *searchFn) emitOldest(emit func(Block), done func(int64)) error {
	p := f.pending[0]
	<-p.done
	f.pending = f.pending[1:]
	f.free = append(f.free, p.ws)
	if p.err != nil || !p.ok {
		return p.err
	}
	if f.Spill.On() {
		if err := f.Spill.put(genSearched, &p.b, nil); err != nil {
			return err
		}
	}
	emit(p.b)
	done(int64(len(p.b.Keys)))
	return nil
}

// search searches one block (the parts of its key) with ws's buffers: ok is
// false when it has no queries.
func (f *searchFn) search(ws *searchWork, key int64, parts []Part) (Block, bool, error) {
	d := parts[0].D
	var stored, queries []storedRef
	for a := range parts {
		for i := range parts[a].Keys {
			stored = append(stored, storedRef{int32(a), int32(i)})
		}
		for qi := range parts[a].Q {
			queries = append(queries, storedRef{int32(a), int32(qi)})
		}
	}
	skey := func(r storedRef) int64 { return parts[r.part].Keys[r.i] }
	qkey := func(r storedRef) int64 { return parts[r.part].Keys[parts[r.part].Q[r.i]] }
	slices.SortFunc(stored, func(a, b storedRef) int { return cmp.Compare(skey(a), skey(b)) })
	slices.SortFunc(queries, func(a, b storedRef) int { return cmp.Compare(qkey(a), qkey(b)) })
	if len(queries) == 0 {
		return Block{}, false, nil
	}
	cm := knn.Matrix{Rows: len(stored), Cols: d, Data: make([]float32, 0, len(stored)*d)}
	cids := make([]int64, len(stored))
	chome := make([]int64, len(stored))
	for c, r := range stored {
		pt := &parts[r.part]
		cm.Data = append(cm.Data, pt.X[int(r.i)*d:int(r.i+1)*d]...)
		cids[c], chome[c] = pt.Keys[r.i], pt.Home[r.i]
	}
	n, k := len(queries), f.P.K
	q := knn.Matrix{Rows: n, Cols: d, Data: make([]float32, 0, n*d)}
	b := Block{Key: key, Keys: make([]int64, n), Src: make([]int32, n), Offset: make([]int64, n), Row: make([]int32, n),
		LabelOff: make([]int32, 1, n+1), K: k, Nbr: make([]int32, n*k), Weight: make([]float64, n*k)}
	shardIdx := map[string]int32{}
	for a, r := range queries {
		pt := &parts[r.part]
		s := pt.Q[r.i]
		q.Data = append(q.Data, pt.X[int(s)*d:int(s+1)*d]...)
		b.Keys[a] = pt.Keys[s]
		si, ok := shardIdx[pt.Shard]
		if !ok {
			si = int32(len(b.Shards))
			shardIdx[pt.Shard] = si
			b.Shards = append(b.Shards, pt.Shard)
		}
		b.Src[a], b.Offset[a], b.Row[a] = si, pt.Offset, pt.Row[r.i]
		b.IDKind, b.Multi = pt.IDKind, pt.Multi
		if pt.IDKind == schemas.IDString {
			b.StrIDs = append(b.StrIDs, pt.StrIDs[r.i])
		}
		b.Labels = append(b.Labels, pt.storedLabels(s)...)
		b.LabelOff = append(b.LabelOff, int32(len(b.Labels)))
	}
	if f.Features {
		// The queries' features, in the block's item order: a copy, as
		// the searcher's buffers are reused.
		b.D, b.X = d, slices.Clone(q.Data)
	}
	idx, err := f.searcher.Index(cm, cids, f.P.Metric)
	if err != nil {
		return Block{}, false, fmt.Errorf("ivfstages: block %d: indexing %d stored items: %w", key, len(cids), err)
	}
	err = idx.Search(&ws.res, q, b.Keys, k)
	idx.Close()
	if err != nil {
		return Block{}, false, fmt.Errorf("ivfstages: block %d: kNN of %d items: %w", key, n, err)
	}
	if err := ws.wb.Weights(b.Weight, q, cm, &ws.res, f.P.Weighting, f.P.LLC, f.coder); err != nil {
		return Block{}, false, fmt.Errorf("ivfstages: block %d: neighbour weights: %w", key, err)
	}
	// Neighbours: local items by index, others through the external table.
	ext := map[int64]int64{}
	for _, c := range ws.res.Index {
		if c >= 0 && chome[c] != key {
			ext[cids[c]] = chome[c]
		}
	}
	b.ExtKeys = slices.Sorted(maps.Keys(ext))
	b.ExtHome = make([]int64, len(b.ExtKeys))
	for e, nk := range b.ExtKeys {
		b.ExtHome[e] = ext[nk]
	}
	if f.P.Mixture.PooledIters > 0 {
		// The pooled start reads its external neighbours' given labels
		// (pooled.go); they came with their stored copies.
		cref := make(map[int64]storedRef, len(b.ExtKeys))
		for c, r := range stored {
			if chome[c] != key {
				cref[cids[c]] = r
			}
		}
		b.ExtLabelOff = make([]int32, 1, len(b.ExtKeys)+1)
		for _, nk := range b.ExtKeys {
			r := cref[nk]
			b.ExtLabels = append(b.ExtLabels, parts[r.part].storedLabels(r.i)...)
			b.ExtLabelOff = append(b.ExtLabelOff, int32(len(b.ExtLabels)))
		}
	}
	for j, c := range ws.res.Index {
		switch {
		case c < 0:
			b.Nbr[j] = -1
		case chome[c] == key:
			b.Nbr[j] = int32(search64(b.Keys, cids[c]))
		default:
			b.Nbr[j] = int32(-2 - search64(b.ExtKeys, cids[c]))
		}
	}
	mp := &f.P.Mixture
	var s mixture.State
	b.State.Reset()
	if mp.UsesInit() {
		b.Init.Reset()
	}
	for i := 0; i < n; i++ {
		s.Init(b.Labels[b.LabelOff[i]:b.LabelOff[i+1]], mp.C, mp.C0, mp.Smooth)
		b.State.Append(&s)
		if mp.UsesInit() {
			b.Init.Append(&s)
		}
	}
	return b, true, nil
}

// search64 returns the index of x in the ascending slice s (which holds it).
func search64(s []int64, x int64) int {
	i := sort.Search(len(s), func(i int) bool { return s[i] >= x })
	if i == len(s) || s[i] != x {
		panic(fmt.Sprintf("ivfstages: key %d missing from its block", x))
	}
	return i
}

// searchGroupPartitions is how many partitions' blocks make one group of
// the spilled search's shuffle (PartRefs).
const searchGroupPartitions = 64

// searchGroup is the group of block key bk with per partitions to a group
// (0: searchGroupPartitions; with 64, partitions 0-63 are group 0).
func searchGroup(bk int64, per int) int64 {
	if per <= 0 {
		per = searchGroupPartitions
	}
	return (bk >> 24) / int64(per)
}

// PartRefs locates, in one input batch's spill file, its parts for the
// blocks of one group of partitions: the spilled search's shuffle element.
//
// Why not one reference per (batch, block): that shuffle held batches x
// blocks elements, quadratic in the rows (both grow with them): at 2M rows
// 512,000 references, which the embedded runner handed the search in one
// bundle of about 180 MB, held several times over in its data plane (the
// search's peak); at 10M rows 25 times as many. Grouped, it is batches x
// groups elements of a few bytes per block.
type PartRefs struct {
	// Path is the batch's spill file; Blocks the block keys, ascending;
	// Block Blocks[i]'s part is Len[i] bytes at Off[i].
	Path     string
	Blocks   []int64
	Off, Len []int64
	// FeatOff is where the batch's features (standardised, row by row,
	// float32 little-endian) start in Path: the parts give their stored
	// items' rows (Part.At).
	FeatOff int64
}

// encodePartRefs writes the blocks and offsets as varint deltas: the
// parts follow each other in the file in block order, so most take two
// or three bytes.
func encodePartRefs(r PartRefs) []byte {
	w := wire.Writer{B: make([]byte, 0, len(r.Path)+16+6*len(r.Blocks))}
	w.String(r.Path)
	w.Varint(r.FeatOff)
	w.Uvarint(uint64(len(r.Blocks)))
	var prevKey, end int64
	for i, bk := range r.Blocks {
		w.Varint(bk - prevKey)
		w.Varint(r.Off[i] - end)
		w.Varint(r.Len[i])
		prevKey, end = bk, r.Off[i]+r.Len[i]
	}
	return w.B
}

func decodePartRefs(b []byte) (PartRefs, error) {
	rd := wire.Reader{B: b}
	r := PartRefs{Path: rd.String(), FeatOff: rd.Varint()}
	n := rd.Uvarint()
	if n > uint64(len(b)) {
		return r, fmt.Errorf("ivfstages: decoding part references: %d blocks in %d bytes", n, len(b))
	}
	r.Blocks, r.Off, r.Len = make([]int64, n), make([]int64, n), make([]int64, n)
	var prevKey, end int64
	for i := range r.Blocks {
		r.Blocks[i] = prevKey + rd.Varint()
		r.Off[i] = end + rd.Varint()
		r.Len[i] = rd.Varint()
		prevKey, end = r.Blocks[i], r.Off[i]+r.Len[i]
	}
	return r, rd.Err()
}

// emitRefsFn is emitFn where the parts are spilled (Spill on): each
// batch's parts go into its file as before, and one PartRefs per group of
// blocks passes the shuffle, keyed by searchGroup.
type emitRefsFn struct {
	Wave, Waves int
	Spill       Spill
	// Group is how many partitions make a group. Optional: 0 means
	// searchGroupPartitions.
	Group int
}

func (f *emitRefsFn) ProcessElement(pr Probed, m ivf.Model, dup string, _ func(*int64) bool, emit func(int64, PartRefs)) error {
	if !f.Spill.On() {
		return errors.New("ivfstages: emitRefsFn without a spill directory")
	}
	keys, out, err := (&emitFn{Wave: f.Wave, Waves: f.Waves}).build(pr, m, dup, true)
	if err != nil {
		return err
	}
	feat, err := f.Spill.putParts(pr.Rows.Shard, pr.Rows.Offset, f.Wave, pr.Rows.Features, out)
	if err != nil {
		return err
	}
	for lo := 0; lo < len(keys); {
		g := searchGroup(keys[lo], f.Group)
		hi := lo
		r := PartRefs{FeatOff: feat}
		for ; hi < len(keys) && searchGroup(keys[hi], f.Group) == g; hi++ {
			ref := out[hi].Spilled
			if r.Path == "" {
				r.Path = ref.Path
			} else if ref.Path != r.Path {
				return fmt.Errorf("ivfstages: a batch's parts in two files (%s, %s)", r.Path, ref.Path)
			}
			r.Blocks, r.Off, r.Len = append(r.Blocks, keys[hi]), append(r.Off, ref.Off), append(r.Len, ref.Len)
		}
		emit(g, r)
		lo = hi
	}
	return nil
}

// searchRefsFn is searchFn for a group of blocks (emitRefsFn's): it reads
// the group's parts from the batches' files, one file at a time, and
// searches the blocks in key order.
type searchRefsFn struct {
	P        engine.NeighbourParams
	Spill    Spill
	Features bool

	fn *searchFn
}

func (f *searchRefsFn) Setup() error {
	f.fn = &searchFn{P: f.P, Spill: f.Spill, Features: f.Features}
	return f.fn.Setup()
}

func (f *searchRefsFn) ProcessElement(ctx context.Context, group int64, iter func(*PartRefs) bool, emit func(Block), done func(int64)) error {
	byBlock := map[int64][]Part{}
	var r PartRefs
	for iter(&r) {
		parts, err := readParts(r)
		if err != nil {
			return err
		}
		for i, bk := range r.Blocks {
			byBlock[bk] = append(byBlock[bk], parts[i])
		}
		r = PartRefs{}
	}
	for _, bk := range slices.Sorted(maps.Keys(byBlock)) {
		parts := byBlock[bk]
		delete(byBlock, bk)
		if err := f.fn.start(bk, parts, emit, done); err != nil {
			return err
		}
	}
	return nil
}

func (f *searchRefsFn) FinishBundle(ctx context.Context, emit func(Block), done func(int64)) error {
	return f.fn.FinishBundle(ctx, emit, done)
}

// readParts reads the parts r locates, with their stored items' features
// (Part.X) read by row (Part.At) from the batch's features.
//
// The file is read through a memory map (golang.org/x/exp/mmap), unmapped
// before the next file so that the mapped pages the process holds stay
// one file's: the rows a group needs of a batch's features are a few
// hundred scattered over it, and a read per row cost a system call each.
// The parts of a group's blocks follow each other in the file and are
// copied out at once: every block gets a part from nearly every input
// batch, and a read per part was, at 10M rows (610 batches, 20,000
// blocks), 12 million opens and reads of a couple of KB each.
func readParts(r PartRefs) ([]Part, error) {
	if len(r.Blocks) == 0 {
		return nil, nil
	}
	lo, hi := r.Off[0], r.Off[0]+r.Len[0]
	for i := range r.Blocks {
		lo, hi = min(lo, r.Off[i]), max(hi, r.Off[i]+r.Len[i])
	}
	m, err := mmap.Open(r.Path)
	if err != nil {
		return nil, fmt.Errorf("ivfstages: spill: %w (was the spill directory removed while the job ran?)", err)
	}
	defer m.Close()
	buf := make([]byte, hi-lo)
	if _, err := m.ReadAt(buf, lo); err != nil {
		return nil, fmt.Errorf("ivfstages: spill: parts: reading %d bytes at %d of %s: %w", hi-lo, lo, r.Path, err)
	}
	parts := make([]Part, len(r.Blocks))
	for i := range r.Blocks {
		off := r.Off[i] - lo
		p, err := decodePart(buf[off : off+r.Len[i]])
		if err == nil {
			err = features(&p, m, r.FeatOff)
		}
		if err != nil {
			return nil, fmt.Errorf("ivfstages: spill: part: %s at %d: %w", r.Path, r.Off[i], err)
		}
		parts[i] = p
	}
	return parts, nil
}

// features fills p.X with its stored items' features, read by row (p.At)
// from the batch's features at featOff in m.
func features(p *Part, m *mmap.ReaderAt, featOff int64) error {
	if len(p.At) != len(p.Keys) || p.D < 1 {
		return fmt.Errorf("%d stored items with %d rows, dimension %d", len(p.Keys), len(p.At), p.D)
	}
	d := p.D
	p.X = make([]float32, len(p.At)*d)
	row := make([]byte, 4*d)
	for i, at := range p.At {
		off := featOff + int64(at)*int64(4*d)
		if at < 0 || off+int64(len(row)) > int64(m.Len()) {
			return fmt.Errorf("stored item %d: row %d beyond the batch's features", p.Keys[i], at)
		}
		if _, err := m.ReadAt(row, off); err != nil {
			return err
		}
		x := p.X[i*d : (i+1)*d]
		for j := range x {
			x[j] = math.Float32frombits(binary.LittleEndian.Uint32(row[4*j:]))
		}
	}
	p.At = nil
	return nil
}

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*emitRefsFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*searchRefsFn)(nil)).Elem())
	beam.RegisterCoder(reflect.TypeOf(PartRefs{}), encodePartRefs, decodePartRefs)
	register.Emitter2[int64, PartRefs]()
	register.Iter1[PartRefs]()
}

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*probeFn)(nil)).Elem())
	register.Emitter1[Probed]()
	beam.RegisterDoFn(reflect.TypeOf((*emitFn)(nil)).Elem())
	register.Iter1[int64]()
	register.Emitter2[int64, Part]()
	beam.RegisterDoFn(reflect.TypeOf((*searchFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*modelTokenFn)(nil)).Elem())
	register.Emitter1[int64]()
	register.Iter1[Part]()
	register.Emitter1[Block]()
}
