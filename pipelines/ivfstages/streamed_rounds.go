package ivfstages

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/relabel/relabel/internal/budget"
	"github.com/relabel/relabel/internal/pool"
	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/io/spillio"
	"github.com/relabel/relabel/pipelines/stages"
	"github.com/relabel/relabel/schemas/wire"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/mixture"
)

// streamed runs localRoundsFn's rounds (RoundConf.Streamed) holding only
// the items' states, one round's at a time: every round reads each block
// again from its spill file (the search's, where it waits anyway), runs its
// items against the states in memory and writes their next states to a
// file of the round's generation; once every block has run, the next
// states are read back in place of the last.
//
// Why: the rounds in one stage hold every block and two rounds' states (at
// a million rows about 2 GiB), so past --local-rounds-mib the embedded
// runner ran a join per round instead, which builds, encodes, writes,
// reads and decodes every block and every message of states between blocks
// each round and waits for Prism's shuffle of their references: 1.46 times
// the one-stage rounds' wall time at a million rows (docs/PERFORMANCE.md).
// Here each round reads the blocks (about half of what a round's join
// moves) and writes and reads one copy of the states, and neighbours'
// states are read in memory. The items' rounds are engine.RunRound's on
// the same states and neighbours, so the results are the local rounds' bit
// for bit (TestLocalRounds' streamed cases). The linear head is not fitted here (it
// needs every item's features at once): JoinRoundsParams refuses it.
func (f *localRoundsFn) streamed(ctx context.Context, iter func(*Block) bool, emit func(string, BatchItems)) error {
	// The group waited for the whole search, the last reader of its input.
	if err := f.Spill.drop(genSearchIn); err != nil {
		return err
	}
	var refs []Block
	var v Block
	for iter(&v) {
		if v.Spilled.Path == "" {
			return fmt.Errorf("ivfstages: streamed rounds: block %d is not in a spill file", v.Key)
		}
		refs = append(refs, v)
		v = Block{}
	}
	slices.SortFunc(refs, func(x, y Block) int { return cmp.Compare(x.Key, y.Key) })
	n := len(refs)
	// Read once: the keys, to locate every external neighbour, and the
	// initial states.
	keys := make([]Block, n)
	cur := make([]mixture.States, n)
	var rows atomic.Int64
	k := 0
	err := pool.EachIndexErr(n, f.Workers, func(x int) error {
		b, err := f.load(refs[x])
		if err != nil {
			return err
		}
		keys[x] = Block{Key: b.Key, Keys: b.Keys, ExtKeys: b.ExtKeys, ExtHome: b.ExtHome}
		cur[x] = b.State
		rows.Add(int64(b.Len()))
		if x == 0 {
			k = b.K
		}
		return nil
	})
	if err != nil {
		return err
	}
	ext, err := locate(keys, f.Workers)
	if err != nil {
		return err
	}
	keys = nil
	if n > 0 && budget.StreamedRounds(rows.Load(), k, f.Mixture) >= tightGCBytes {
		defer tightenGC()()
	}
	neighbours := func(x int) func(e int) (*mixture.States, int) {
		return func(e int) (*mixture.States, int) {
			l := ext[x][e]
			return &cur[l.block], int(l.item)
		}
	}
	rounder := engine.WithWorkers(f.rounder, 1, &f.scratch)
	for r := range f.Rounds {
		progress.RoundStarted(r, f.Rounds)
		gen := genRouted + 1 + r
		next := make([]spillRef, n)
		var ran atomic.Int64
		// Each goroutine appends its blocks' next states to a file of its
		// own (spillio.Appender).
		var mu sync.Mutex
		var files []*spillio.Appender
		err := pool.EachIndexWith(n, f.Workers, func(ws *streamedWork, x int) error {
			if err := ctx.Err(); err != nil {
				return err // a stopped run: the rest of the blocks return here
			}
			b, err := load(refs[x].Spilled, decodeBlockRounds, fmt.Sprintf("block %d", refs[x].Key))
			if err != nil {
				return err
			}
			st, nr, err := rounder.Round(b.batch(&cur[x], neighbours(x)), r, &f.Mixture)
			if err != nil {
				return fmt.Errorf("ivfstages: streamed rounds: block %d round %d (%d items): %w", b.Key, r, b.Len(), err)
			}
			ran.Add(int64(nr))
			if ws.out == nil {
				mu.Lock()
				ws.out, err = f.Spill.files().Append(gen, "s"+strconv.Itoa(len(files)))
				if err == nil {
					files = append(files, ws.out)
				}
				mu.Unlock()
				if err != nil {
					return fmt.Errorf("ivfstages: spill: %w", err)
				}
			}
			w := wire.Writer{B: ws.buf[:0]}
			putStatesPacked(&w, &st)
			ws.buf = w.B
			next[x], err = ws.out.Put(w.B)
			if err != nil {
				return fmt.Errorf("ivfstages: spill: %w", err)
			}
			return nil
		})
		for _, a := range files {
			if cerr := a.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("ivfstages: spill: %w", cerr)
			}
		}
		if err != nil {
			return err
		}
		itemRounds.Inc(ctx, ran.Load())
		// The last round's states are garbage once the next are read: one
		// round's states in memory (the collector's target over them).
		cur = make([]mixture.States, n)
		err = pool.EachIndexErr(n, f.Workers, func(x int) error {
			var err error
			cur[x], err = load(next[x], func(p []byte) (mixture.States, error) {
				r := wire.Reader{B: p}
				s, err := getStatesPacked(&r)
				if err == nil {
					err = r.Err()
				}
				return s, err
			}, fmt.Sprintf("block %d's states after round %d", refs[x].Key, r))
			return err
		})
		if err != nil {
			return err
		}
		if err := f.Spill.drop(gen); err != nil {
			return err
		}
	}
	if f.Given {
		fit, err := givenLocal(n, func(x int) (*Block, error) {
			b, err := f.load(refs[x])
			return &b, err
		}, ext, cur, f.Mixture.C, f.Mixture.C0, f.Mixture.Seed, 0, f.Workers)
		if err != nil {
			return err
		}
		if f.Keep != "" {
			if err := stages.KeepGiven(ctx, f.Keep, fit); err != nil {
				return fmt.Errorf("ivfstages: %w", err)
			}
		}
	}
	// Nothing reads the search's blocks once they are sent on.
	return f.unblockAll(n, func(x int) (Block, error) { return f.load(refs[x]) }, cur,
		func() error { return f.Spill.drop(genSearched) }, emit)
}

// streamedWork is a goroutine's file and encoding buffer for one round's
// next states.
type streamedWork struct {
	out *spillio.Appender
	buf []byte
}

// load reads block ref (a reference into the spill) without the
// neighbours' labels, which only the pooled start reads.
func (f *localRoundsFn) load(ref Block) (Block, error) {
	b := ref
	if err := b.unspill(); err != nil {
		return b, err
	}
	b.ExtLabels, b.ExtLabelOff = nil, nil
	return b, nil
}
