package job

import (
	"github.com/relabel/relabel/internal/budget"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/transforms/head"
)

// resolveHead fixes --head for the plan's mode (options.ResolveHead): the
// linear head is fitted in exact and sample modes' rounds
// (stages.RoundsParams.Head) and in ivf mode's local rounds
// (ivfstages.JoinRoundsParams.Head) where they hold the head too
// (localRounds); ivf's join per round and annotator-aware runs have none,
// and refuse an explicit value other than off, naming the flag.
func (p *Job) resolveHead() error {
	v, err := p.opts.ResolveHead(p.Mode, p.LocalRounds(true), p.Crowd != nil)
	if err != nil {
		return err
	}
	p.Head = v
	return nil
}

// LocalRounds reports whether an ivf run's rounds run in one stage with
// every block in memory (ivfstages.JoinRoundsParams.Local): on the embedded
// runner (the one that spills: --spill-dir set, not none) when their
// estimated size (budget.LocalRounds, with the head's features and
// buffers when withHead) is within --local-rounds-mib.
func (p *Job) LocalRounds(withHead bool) bool {
	_, local := p.LocalRoundsSize(withHead)
	return local
}

// LocalRoundsSize is budget.LocalRounds of the job's ivf blocks (with the
// head's features when withHead), and whether the rounds run in one stage
// (LocalRounds): never where the run is not ivf, has no rounds or no spill
// directory (size 0 there), else where the size is within
// --local-rounds-mib.
func (p *Job) LocalRoundsSize(withHead bool) (size int64, local bool) {
	if p.Mode != options.NeighboursIVF || p.opts.Rounds <= 0 || p.SpillDir() == "" {
		return 0, false
	}
	d := 0
	if withHead {
		d = max(p.Read.D, 1)
	}
	size = budget.LocalRounds(p.Rows, p.opts.K, p.Mixture, d)
	return size, size <= p.LocalRoundsBytes()
}

// LocalExactSize is budget.LocalExact of the job's input, and whether
// the exact and sample modes' stages run in one (stages.Local): on the
// embedded runner (spill files: --spill-dir set, not none), without
// annotators (their rows join the items between the stages), where
// --local-rounds-mib is not 0 and the estimate fits within it. Elsewhere
// the stages run one after another, with the same output; a distributed
// runner spreads the search over its workers there.
func (p *Job) LocalExactSize() (size int64, local bool) {
	if p.Mode == options.NeighboursIVF || p.Crowd != nil || p.SpillDir() == "" || p.opts.LocalMiB == 0 {
		return 0, false
	}
	d := 0
	if p.HeadParams() != nil {
		d = max(p.Read.D, 1)
	}
	size = budget.LocalExact(p.Rows, p.Read.D, p.opts.K, p.Mixture, d)
	return size, size <= p.LocalRoundsBytes()
}

// StreamedRoundsSize is budget.StreamedRounds of the job's ivf items, and
// whether its rounds run in one stage with only the items' states in
// memory, every block read from its spill file each round
// (ivfstages.JoinRoundsParams.Streamed): on the embedded runner (spill
// files) where every block does not fit in --local-rounds-mib, unless that
// is 0 (a join per round asked for), without the linear head, and where
// the whole run's estimate with those states fits in half of this
// machine's memory (budget.Memory): the other half is the page cache that
// holds the blocks' spill files, read every round. Elsewhere the rounds
// join one round at a time.
func (p *Job) StreamedRoundsSize() (size int64, streamed bool) {
	if p.Mode != options.NeighboursIVF || p.opts.Rounds <= 0 || p.SpillDir() == "" || p.opts.LocalMiB == 0 || p.HeadParams() != nil {
		return 0, false
	}
	if _, local := p.LocalRoundsSize(false); local {
		return 0, false
	}
	size = budget.StreamedRounds(p.Rows, p.opts.K, p.Mixture)
	s := p.sizes()
	s.Local, s.Streamed = size, true
	mem := budget.Memory()
	return size, mem > 0 && budget.Of(s).Peak <= mem/2
}

// HeadParams is the head of the job's rounds, nil for none.
func (p *Job) HeadParams() *head.Params {
	if p.Head == "" {
		return nil
	}
	hp, err := options.HeadParams(p.Head, p.opts.Seed)
	if err != nil {
		panic(err) // resolveHead checked it
	}
	return hp
}
