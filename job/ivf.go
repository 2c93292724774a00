package job

import (
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/transforms/ivf"
)

// IVFParams are the ivf parameters of a run over n rows with options o:
// ivf's defaults for n rows, with --partitions and --nprobe where given
// (the one place the lake and the pipeline resolve them: the lake's
// launcher-side fit must partition as the pipeline's ivf stages do).
func IVFParams(o *options.Options, n int64) ivf.Params {
	p := ivf.DefaultParams(n)
	if o.Partitions.Set {
		p = p.WithPartitions(n, o.Partitions.V)
	}
	if o.NProbe.Set {
		p = p.WithNProbe(o.NProbe.V)
	}
	p.Seed, p.Metric = o.Seed, o.Metric
	return p
}
