package pipelines

import (
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/transforms/head"
)

// resolveHead fixes --head for the plan's mode (options.ResolveHead): the
// linear head is fitted in exact and sample modes' rounds
// (stages.RoundsParams.Head); ivf mode and annotator-aware runs have none,
// and refuse an explicit value other than off, naming the flag.
func (p *Plan) resolveHead() error {
	v, err := p.Options.ResolveHead(p.Mode, p.Crowd != nil)
	if err != nil {
		return err
	}
	p.Head = v
	return nil
}

// headParams is the head of the plan's rounds, nil for none.
func (p *Plan) headParams() *head.Params {
	if p.Head == "" {
		return nil
	}
	hp, err := options.HeadParams(p.Head, p.Options.Seed)
	if err != nil {
		panic(err) // resolveHead checked it
	}
	return hp
}
