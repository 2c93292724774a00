package quality

import (
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/transforms/engine"
)

var (
	explore     = flag.String("explore", "", "issue 32's exploration: comma-separated variants (base, pooledN) on -explore.without's complement")
	exploreSkip = flag.String("explore.without", "fashion_mnist_pca50", "datasets the exploration leaves out")
)

func TestExplore(t *testing.T) {
	if *explore == "" {
		t.Skip("-explore")
	}
	cells := Without(devGrid(t), strings.Split(*exploreSkip, ",")...)
	for _, v := range strings.Split(*explore, ",") {
		var tweak func(*engine.Options)
		var iters, pct, anchor int
		if _, err := fmt.Sscanf(v, "pooled%d/%d/%d", &iters, &pct, &anchor); err == nil {
			own := strings.HasSuffix(v, "own")
			tweak = func(o *engine.Options) {
				o.Mixture.PooledIters, o.Mixture.PooledWeight = iters, float64(pct)/100
				o.Mixture.Anchor = float64(anchor) / 100
				o.Mixture.PooledOwn = own
			}
		}
		var sum, sumT float64
		nt := 0
		for _, cell := range cells {
			rep, dt, err := RunCellEngine(cell, options.Defaults(), tweak)
			if err != nil {
				t.Fatal(err)
			}
			r := Result{Cell: cell, Report: rep, Time: dt}
			sum += r.Cleaned()
			if cell.Target() {
				sumT += r.Cleaned()
				nt++
			}
			t.Logf("%-10s %-28s relabel %.4f knn %.4f best %.4f ECE %.4f (%.1fs)", v, cell.Name(), r.Cleaned(), r.KNN(), bestPeer(r), float64(rep.ECE), dt.Seconds())
		}
		t.Logf("%-10s mean %.4f target mean %.4f", v, sum/float64(len(cells)), sumT/float64(max(nt, 1)))
	}
}
