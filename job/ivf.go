package job

import (
	"github.com/relabel/relabel/transforms/ivf"
)

// IVFParams are the ivf parameters of the job's run over n rows: ivf's
// defaults for n rows, with --partitions and --nprobe where given (the one
// place the lake and the pipeline resolve them: the lake's launcher-side
// fit must partition as the pipeline's ivf stages do).
func (p *Job) IVFParams(n int64) ivf.Params {
	o := &p.opts
	ip := ivf.DefaultParams(n)
	if o.Partitions.Set {
		ip = ip.WithPartitions(n, o.Partitions.V)
	}
	if o.NProbe.Set {
		ip = ip.WithNProbe(o.NProbe.V)
	}
	ip.Seed, ip.Metric = o.Seed, o.Metric
	return ip
}

// IVFGiven are --partitions and --nprobe as given, unclamped: partitions 0
// when not given (ivf's default for the rows), nprobe ivf.DefaultNProbe
// when not given. A kept partitioning serves a run only where they match
// it (the lake's usable).
func (p *Job) IVFGiven() (partitions, nprobe int) {
	o := &p.opts
	if o.Partitions.Set && o.Partitions.V > 0 {
		partitions = o.Partitions.V
	}
	return partitions, o.NProbe.Or(ivf.DefaultNProbe)
}
