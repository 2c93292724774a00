package stages

import (
	"cmp"
	"context"
	"fmt"
	"log"
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/mixture"
)

// requestFn keys a block by its own key and asks each block holding some of
// its external neighbours for them (one JoinMsg per asked block, keys only).
type requestFn struct{}

func (requestFn) ProcessElement(b IVFBlock, emitBlock func(int64, IVFBlock), emitMsg func(int64, JoinMsg)) {
	ask := map[int64][]int64{}
	for e, h := range b.ExtHome {
		ask[h] = append(ask[h], b.ExtKeys[e])
	}
	for _, h := range slices.Sorted(mapKeys(ask)) {
		emitMsg(h, JoinMsg{From: b.Key, Keys: ask[h]})
	}
	emitBlock(b.Key, b)
}

// routeFn records in each block which of its items' states every other block
// asked for (Dest*), in the order of the asking blocks' keys.
type routeFn struct{}

func (routeFn) ProcessElement(key int64, blocks func(*IVFBlock) bool, msgs func(*JoinMsg) bool, emit func(IVFBlock)) error {
	b, err := oneBlock(key, blocks)
	if err != nil {
		return err
	}
	var asks []JoinMsg
	var m JoinMsg
	for msgs(&m) {
		asks = append(asks, m)
		m = JoinMsg{}
	}
	slices.SortFunc(asks, func(x, y JoinMsg) int { return cmp.Compare(x.From, y.From) })
	b.DestKey, b.DestOff, b.DestItem = nil, []int32{0}, nil
	for _, a := range asks {
		b.DestKey = append(b.DestKey, a.From)
		for _, k := range a.Keys {
			b.DestItem = append(b.DestItem, int32(search64(b.Keys, k)))
		}
		b.DestOff = append(b.DestOff, int32(len(b.DestItem)))
	}
	emit(b)
	return nil
}

func oneBlock(key int64, blocks func(*IVFBlock) bool) (IVFBlock, error) {
	var b, extra IVFBlock
	if !blocks(&b) {
		return b, fmt.Errorf("stages: ivf block %d: asked for states but absent", key)
	}
	if blocks(&extra) {
		return b, fmt.Errorf("stages: ivf block %d: two blocks under one key", key)
	}
	return b, nil
}

// sendFn keys a block by its own key and sends the states other blocks need
// this round (one JoinMsg per receiving block).
type sendFn struct{}

func (sendFn) ProcessElement(b IVFBlock, emitBlock func(int64, IVFBlock), emitMsg func(int64, JoinMsg)) {
	for d, to := range b.DestKey {
		m := JoinMsg{From: b.Key}
		m.States.Reset()
		for _, i := range b.DestItem[b.DestOff[d]:b.DestOff[d+1]] {
			m.Keys = append(m.Keys, b.Keys[i])
			m.States.AppendFrom(&b.State, int(i))
		}
		emitMsg(to, m)
	}
	emitBlock(b.Key, b)
}

// joinRoundFn runs one round (mixture.Round) for every item of a block, with
// its neighbours' states of the previous round: local ones from the block,
// external ones from the messages joined to it by key. Items run on all
// cores: Prism may hand a worker one bundle at a time.
type joinRoundFn struct {
	Round   int
	Rounds  int
	Mixture mixture.Params
	Workers int

	pool sync.Pool
	once sync.Once
}

func (f *joinRoundFn) ProcessElement(ctx context.Context, key int64, blocks func(*IVFBlock) bool, msgs func(*JoinMsg) bool, emit func(IVFBlock)) error {
	b, err := oneBlock(key, blocks)
	if err != nil {
		return err
	}
	f.once.Do(func() {
		if f.Round == f.Rounds-1 || f.Round == 0 {
			log.Printf("relabel: ivf round %d/%d started", f.Round+1, f.Rounds)
		}
	})
	// ext[e] locates external neighbour e's state: message, item.
	type loc struct{ m, i int32 }
	ext := make([]loc, len(b.ExtKeys))
	for e := range ext {
		ext[e] = loc{-1, -1}
	}
	var got []JoinMsg
	var m JoinMsg
	for msgs(&m) {
		for i, k := range m.Keys {
			e := sort.Search(len(b.ExtKeys), func(e int) bool { return b.ExtKeys[e] >= k })
			if e == len(b.ExtKeys) || b.ExtKeys[e] != k {
				return fmt.Errorf("stages: ivf block %d round %d: state of %d not asked for", key, f.Round, k)
			}
			ext[e] = loc{int32(len(got)), int32(i)}
		}
		got = append(got, m)
		m = JoinMsg{}
	}
	for e, l := range ext {
		if l.m < 0 {
			return fmt.Errorf("stages: ivf block %d round %d: no state for neighbour %d (block %d)", key, f.Round, b.ExtKeys[e], b.ExtHome[e])
		}
	}
	n, k := b.Len(), b.K
	out := make([]mixture.State, n)
	workers := f.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var wg sync.WaitGroup
	const chunk = 64
	next := make(chan int, workers)
	go func() {
		for lo := 0; lo < n; lo += chunk {
			next <- lo
		}
		close(next)
	}()
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, _ := f.pool.Get().(*roundWorker)
			if w == nil {
				w = &roundWorker{}
			}
			defer f.pool.Put(w)
			for lo := range next {
				for i := lo; i < min(lo+chunk, n); i++ {
					if cap(w.neigh) < k {
						w.neigh = make([]mixture.State, k)
					}
					w.neigh, w.w = w.neigh[:0], w.w[:0]
					for j := 0; j < k; j++ {
						c := b.Nbr[i*k+j]
						if c == -1 {
							continue
						}
						w.neigh = w.neigh[:len(w.neigh)+1]
						dst := &w.neigh[len(w.neigh)-1]
						if c >= 0 {
							b.State.Get(dst, int(c))
						} else {
							l := ext[-2-c]
							got[l.m].States.Get(dst, int(l.i))
						}
						w.w = append(w.w, b.Weight[i*k+j])
					}
					b.State.Get(&w.own, i)
					var init *mixture.State
					if b.Init.Len() > 0 {
						b.Init.Get(&w.init, i)
						init = &w.init
					}
					iw := f.Mixture.AnchorWeight(engine.Annotations(b.Labels[b.LabelOff[i]:b.LabelOff[i+1]]))
					w.ws.Round(&w.dst, &w.own, init, iw, w.neigh, w.w, uint64(b.Keys[i]), f.Round, &f.Mixture)
					out[i].CopyFrom(&w.dst)
				}
			}
		}()
	}
	wg.Wait()
	b.State = mixture.States{}
	b.State.Reset()
	for i := range out {
		b.State.Append(&out[i])
	}
	emit(b)
	return nil
}

func init() {
	register.DoFn3x0[IVFBlock, func(int64, IVFBlock), func(int64, JoinMsg)](&requestFn{})
	register.DoFn3x0[IVFBlock, func(int64, IVFBlock), func(int64, JoinMsg)](&sendFn{})
	register.Emitter2[int64, IVFBlock]()
	register.Emitter2[int64, JoinMsg]()
	register.DoFn4x1[int64, func(*IVFBlock) bool, func(*JoinMsg) bool, func(IVFBlock), error](&routeFn{})
	register.DoFn5x1[context.Context, int64, func(*IVFBlock) bool, func(*JoinMsg) bool, func(IVFBlock), error](&joinRoundFn{})
	register.Iter1[IVFBlock]()
	register.Iter1[JoinMsg]()
}

// JoinRounds runs R rounds over blocks (PCollection<IVFBlock>, from
// IVFNeighbours), joining to each block, every round, the previous round's
// states of its neighbours in other blocks by key (CoGroupByKey): a worker
// holds one block and the states sent to it, never the whole dataset. Which
// states go where is worked out once, before the first round.
// Returns PCollection<IVFBlock> with final states.
func JoinRounds(s beam.Scope, blocks beam.PCollection, rounds, workers int, p mixture.Params) beam.PCollection {
	s = s.Scope("relabel.JoinRounds")
	own, asks := beam.ParDo2(s, &requestFn{}, blocks)
	blocks = beam.ParDo(s, &routeFn{}, beam.CoGroupByKey(s, own, asks))
	for r := 0; r < rounds; r++ {
		rs := s.Scope(fmt.Sprintf("round%02d", r))
		own, msgs := beam.ParDo2(rs, &sendFn{}, blocks)
		blocks = beam.ParDo(rs, &joinRoundFn{Round: r, Rounds: rounds, Mixture: p, Workers: workers}, beam.CoGroupByKey(rs, own, msgs))
	}
	return blocks
}
