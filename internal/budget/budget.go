package budget

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Sizes are the quantities the estimate is made of. Zero fields contribute
// nothing.
type Sizes struct {
	// Rows are the input rows (items); D their feature dimension (0: a
	// label-only run, no features).
	Rows int64
	D    int
	// C is the class count, C0 the classes each item's posterior keeps.
	C, C0 int
	// K neighbours per item; L count vectors of N trials per item per round.
	K, L, N int
	// Annotations are the annotation rows of an annotator-aware run.
	Annotations int64
	// IVF says the run searches neighbours with ivf: its items meet in
	// blocks, far less memory per row than exact or sample search.
	IVF bool
	// Spilled says the ivf blocks and states wait between stages in spill
	// files, not in the runner's memory (the embedded runner's default,
	// --spill-dir).
	Spilled bool
	// Local is, where the ivf rounds all run in one stage with every block
	// in memory (the embedded runner within --local-rounds-mib), the
	// blocks' estimated size, LocalRounds; 0 where they join one round at a
	// time, one block at a time.
	Local int64
	// LocalExact says the exact or sample mode's stages run in one
	// (pipelines/stages' Local: the embedded runner within
	// --local-rounds-mib), every batch in memory on one worker, none of it
	// held encoded by the runner between stages.
	LocalExact bool
	// Streamed says Local is the streamed rounds' estimate
	// (StreamedRounds: one round's states, the blocks read from the spill
	// files each round), not every block's.
	Streamed bool
}

// Term is one part of an estimate: the flag a user would change to shrink
// it, and its bytes.
type Term struct {
	Flag  string
	What  string
	Bytes int64
}

// Estimate is a run's expected peak memory (the sum of Terms and Base) and
// the size of the output it writes.
type Estimate struct {
	Peak   int64
	Output int64
	Terms  []Term
}

// The coefficients, in bytes, of the estimate's terms, fitted to the peak
// resident memory of relabel run (Prism, 2 cores, GOGC 100; ru_maxrss) at
// six sizes (rows x d, K): 1,797 x 64, 3,000 x 32, 20,000 x 64 and
// 2,000 x 4,096 at K 10, 10,000 x 64 at K 50 (exact mode), 60,000 x 128 at
// K 10 (ivf) (2026-11-27, loaded machine; cmd/relabel's fittedSizes). They
// are tested at sizes sharing no rows, d or K with these
// (TestEstimateMeasured; -budget for all five): estimate/measured 0.97 at
// 5,000 x 96 K 15, 1.22 at 1,000 x 2,048 K 5, 0.71 at 12,000 x 512 K 20,
// 1.12 at 30,000 x 24 K 30 (exact), 1.82 at 80,000 x 48 K 12 (ivf)
// (2026-11-27, 2 cores at load 6-8 from other sessions). A row costs far more
// than its features: Prism holds every PCollection encoded in its shuffle,
// the worker decodes it again, and the garbage collector lets the heap grow
// to twice what is live. ivf mode with spill files keeps its blocks and
// states on disk between stages and holds far less per row; its
// coefficients are fitted to relabel run at 1 and 2 million rows of
// d 64, C 20 with every option at its default (one-stage rounds at 1M, a
// join per round at 2M; cmd/relabel's BenchmarkScaleRun and
// TestOfMeasuredIVF, docs/PERFORMANCE.md, 2026-11-28).
const (
	// Base is the process before any data: the Go runtime, Beam's and
	// Prism's own structures and the kernels' workspaces.
	Base = 215 << 20
	// perFeature is one feature value (float32) of one row, as held
	// across the stages; perItem is a row's cost that does not grow with d
	// or K (ids, labels, states, samples, their encodings); perNeighbour
	// is one neighbour of one item (index, weight, label entries).
	perFeature, perItem, perNeighbour = 120, 18000, 890
	// The same in ivf mode with the shuffles in memory, in waves
	// (--spill-dir none, not measured at scale: the first ivf fit's
	// coefficients, several times what a spilled row holds).
	ivfFeature, ivfItem, ivfNeighbour = 40, 6000, 300
	// The same in ivf mode with spill files (the embedded runner's
	// default): the blocks, states, the search's copies and the writer's
	// input wait in the files, and what passes the runner's shuffles is
	// references that grow no faster than the rows (ivfstages' PartRefs
	// and putBatchGroups, the samples' sampleThreshold). A row's cost is
	// then the runner's and the heap's overhead around the stages that
	// hold a batch or a block at a time: 1.58 GiB at 2M rows with a join
	// per round (heap in use at most 1.09 GiB, in the given-label fit's
	// stages; docs/PERFORMANCE.md).
	spillFeature, spillItem, spillNeighbour = 4, 200, 24
	// localFactor is the resident memory of the one-stage rounds per byte
	// of LocalRounds' estimate of their blocks (Sizes.Local): the blocks,
	// two rounds' states, the collector's 25% over them (ivfstages'
	// tightenGC) and what the runtime keeps of the search's heap (RSS
	// 1.7-1.9 GiB through the rounds at 1M rows for an estimate of 797
	// MiB). They count only where they exceed the rows' other terms.
	localFactor = 2
	// The base and the same coefficients where the exact and sample modes
	// run in one stage (Sizes.LocalExact), fitted to relabel run's peak
	// resident memory at cmd/relabel's five exact fittedSizes (2 cores,
	// idle; 114, 114, 244, 686 and 216 MiB, each within 1% of the fit; the
	// held-out 5,000 x 96 K 15 at 0.94): no encoded copy of the
	// stages' data in the runner, so a fraction of perItem, but a feature
	// value held several times over (as read, standardised for the
	// search, and with the head as float64 in its design matrix).
	localExactBase                                         = 100 << 20
	localExactFeature, localExactItem, localExactNeighbour = 75, 1600, 115
	// perState is one entry of one item's c0-long state (pi, rho rows)
	// beyond the default c0's, held in the round's input and output.
	perState = 48
	// perSample is one trial of one sampled count vector (L x N per item
	// per round, held while the item's EM runs: per worker, not per item).
	perSample = 8
	// perClass is one class's per-run tables (counts, calibration); the
	// C x C transition matrix is perClass2 per entry, when it is estimated.
	perClass  = 64
	perClass2 = 16
	// MaxTransitionClasses is the most classes whose C x C transition
	// matrix the run estimates (beyond it only the confused pairs).
	MaxTransitionClasses = 1000
	// perAnnotation is one annotation row of an annotator-aware run.
	perAnnotation = 96
	// outputPerItem and outputPerState are the output shard's bytes per
	// row (id, labels, probabilities, changed) and per posterior entry,
	// before compression.
	outputPerItem  = 40
	outputPerState = 8
	// workers bounds how many items' samples are held at once.
	workers = 64
)

// Of estimates the run of s.
func Of(s Sizes) Estimate {
	var e Estimate
	add := func(flag, what string, b float64) {
		if b > 0 {
			e.Terms = append(e.Terms, Term{Flag: flag, What: what, Bytes: sat(b)})
		}
	}
	rows := float64(s.Rows)
	feat, item, nb := float64(perFeature), float64(perItem), float64(perNeighbour)
	base := float64(Base)
	switch {
	case s.LocalExact && !s.IVF:
		feat, item, nb = localExactFeature, localExactItem, localExactNeighbour
		base = localExactBase
	case s.IVF && s.Spilled:
		feat, item, nb = spillFeature, spillItem, spillNeighbour
	case s.IVF:
		feat, item, nb = ivfFeature, ivfItem, ivfNeighbour
	}
	add("input", fmt.Sprintf("%d rows x d=%d features", s.Rows, s.D), rows*float64(s.D)*feat)
	add("k", fmt.Sprintf("%d rows x %d neighbours", s.Rows, s.K), rows*float64(s.K)*nb)
	add("input", fmt.Sprintf("%d rows' labels and states", s.Rows), rows*item)
	add("c0", fmt.Sprintf("%d rows x c0=%d posterior entries", s.Rows, s.C0), rows*float64(s.C0)*perState)
	if s.Local > 0 {
		var perRow float64
		for _, t := range e.Terms {
			perRow += float64(t.Bytes)
		}
		what := fmt.Sprintf("every block of %d rows in memory for the rounds in one stage", s.Rows)
		if s.Streamed {
			what = fmt.Sprintf("the states of %d rows in memory for the rounds in one stage", s.Rows)
		}
		add("local-rounds-mib", what, float64(s.Local)*localFactor-perRow)
	}
	add("n", fmt.Sprintf("L=%d x N=%d trials per item, %d items at once", s.L, s.N, workers), float64(s.L)*float64(s.N)*perSample*workers)
	c := float64(s.C)
	add("classes", fmt.Sprintf("%d classes' tables", s.C), c*perClass)
	if s.C <= MaxTransitionClasses {
		add("classes", fmt.Sprintf("%d x %d transition matrix", s.C, s.C), c*c*perClass2)
	}
	add("annotations", fmt.Sprintf("%d annotations", s.Annotations), float64(s.Annotations)*perAnnotation)
	peak := base
	for _, t := range e.Terms {
		peak += float64(t.Bytes)
	}
	e.Peak = sat(peak)
	e.Output = sat(rows*(outputPerItem+float64(s.C0)*outputPerState) + c*perClass)
	return e
}

// Largest is the term of e that contributes most (the flag to name when e
// does not fit).
func (e Estimate) Largest() Term {
	var best Term
	for _, t := range e.Terms {
		if t.Bytes > best.Bytes {
			best = t
		}
	}
	return best
}

// sat converts b to int64, saturating (an estimate of 1e30 bytes is refused,
// not wrapped to a negative number that fits).
func sat(b float64) int64 {
	if b >= math.MaxInt64 || math.IsNaN(b) {
		return math.MaxInt64
	}
	return int64(b)
}

// Memory is the memory a run here may use: the machine's (MemTotal), the
// cgroup's limit when that is lower (a container), or Go's memory limit
// (GOMEMLIMIT) when that is set and lower still. 0 when unknown (no /proc
// and no GOMEMLIMIT), in which case nothing is refused.
func Memory() int64 {
	total := memTotal("/proc/meminfo")
	if lim := debug.SetMemoryLimit(-1); lim > 0 && lim < math.MaxInt64 && (total == 0 || lim < total) {
		total = lim
	}
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if b, err := os.ReadFile(p); err == nil {
			if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && v > 0 && (total == 0 || v < total) {
				total = v
			}
		}
	}
	return total
}

func memTotal(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// Bytes formats n for a message: "4.2 GiB".
func Bytes(n int64) string {
	switch {
	case n >= 1<<60:
		return fmt.Sprintf("%.3g EiB", float64(n)/(1<<60))
	case n >= 1<<40:
		return fmt.Sprintf("%.1f TiB", float64(n)/(1<<40))
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", (n+1023)>>10)
}

// Fit refuses e where it cannot fit in mem bytes (0: unknown, nothing is
// refused): an error naming the flag of the largest term, the estimate and
// the memory.
func Fit(e Estimate, mem int64) error {
	if mem <= 0 || e.Peak <= mem {
		return nil
	}
	t := e.Largest()
	return &Error{Flag: t.Flag, Msg: fmt.Sprintf("the run would need about %s of memory (largest part: %s, %s), more than this machine's %s",
		Bytes(e.Peak), t.What, Bytes(t.Bytes), Bytes(mem))}
}

// Error is a refused estimate: Flag is the option (or "input") whose term
// dominates.
type Error struct {
	Flag string
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Synth estimates relabel synth's peak memory: the generator's class means
// and directions (float64, classes x (rank+1) x d) and the shards written
// at once, each held whole before it is encoded (float32 features, about
// twice over with the writer's buffers).
func Synth(rows int64, d, classes, rank, shards, workers int) Estimate {
	var e Estimate
	if rank <= 0 {
		rank = min(d, 8)
	}
	gen := float64(classes) * float64(rank+1) * float64(d) * 8
	e.Terms = append(e.Terms, Term{Flag: "d", What: fmt.Sprintf("%d classes x %d directions x d=%d", classes, rank+1, d), Bytes: sat(gen)})
	perShard := float64(rows) / float64(max(shards, 1)) * (float64(d)*4 + 16) * 2
	held := perShard * float64(min(max(workers, 1), max(shards, 1)))
	flag := "rows"
	if d > 4096 {
		flag = "d"
	}
	e.Terms = append(e.Terms, Term{Flag: flag, What: fmt.Sprintf("%d rows of d=%d in %d shards", rows, d, shards), Bytes: sat(held)})
	e.Peak = sat(float64(64<<20) + gen + held)
	e.Output = sat(float64(rows) * (float64(d)*4 + 16))
	return e
}
