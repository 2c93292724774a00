package grid

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/mixture"
)

var (
	explore     = flag.String("explore", "", "issue 32's exploration: comma-separated variants (base, pooledI/W/A[/G] with suffixes own, split; G: the gate in hundredths) on -explore.without's complement")
	exploreSkip = flag.String("explore.without", "fashion_mnist_pca50", "datasets the exploration leaves out")
	exploreOnly = flag.String("explore.only", "", "when set, only the cells whose name contains it (e.g. /pair-: the cells a shut gate leaves as they are)")
)

func TestExplore(t *testing.T) {
	if *explore == "" {
		t.Skip("-explore")
	}
	cells := Without(devGrid(t), strings.Split(*exploreSkip, ",")...)
	for _, v := range strings.Split(*explore, ",") {
		var tweak func(*engine.Options)
		var cellName string
		var iters, pct, anchor, gate int
		structure := -1.0
		if strings.HasPrefix(v, "pooled") {
			var err error
			if strings.Count(v, "/") == 3 {
				_, err = fmt.Sscanf(v, "pooled%d/%d/%d/%d", &iters, &pct, &anchor, &gate)
			} else {
				_, err = fmt.Sscanf(v, "pooled%d/%d/%d", &iters, &pct, &anchor)
			}
			if err != nil {
				t.Fatalf("variant %q: %v", v, err)
			}
			own := strings.Contains(v, "own")
			split := strings.Contains(v, "split")
			tweak = func(o *engine.Options) {
				o.Mixture.PooledIters, o.Mixture.PooledWeight = iters, float64(pct)/100
				o.Mixture.Anchor = float64(anchor) / 100
				o.Mixture.PooledOwn = own
				o.Mixture.PooledSplit = split
				o.Mixture.PooledGate = float64(gate) / 100
				o.OnPooled = func(m *mixture.Pooled) {
					structure = m.Structure()
					pooledDump(cellName, m)
				}
			}
		}
		var sum, sumT float64
		nc, nt := 0, 0
		for _, cell := range cells {
			if !strings.Contains(cell.Name(), *exploreOnly) {
				continue
			}
			cellName = cell.Name()
			rep, dt, err := RunCellEngine(cell, job.Defaults(), tweak)
			if err != nil {
				t.Fatal(err)
			}
			r := Result{Cell: cell, Report: rep, Time: dt}
			sum += r.Cleaned()
			nc++
			if cell.Target() {
				sumT += r.Cleaned()
				nt++
			}
			t.Logf("%-10s %-28s relabel %.4f knn %.4f best %.4f ECE %.4f structure %.3f (%.1fs)", v, cell.Name(), r.Cleaned(), r.KNN(), bestPeer(r), float64(rep.ECE), structure, dt.Seconds())
		}
		t.Logf("%-10s mean %.4f target mean %.4f", v, sum/float64(max(nc, 1)), sumT/float64(max(nt, 1)))
	}
}

// pooledDump writes the pooled fit of a cell beside the final states that
// RELABEL_CALDUMP holds (caldump): structure, log-likelihood, then the rows
// of TOwn and T, for fitting a calibration that reads the pooled fit
// (docs/QUALITY.md, the calibration section).
func pooledDump(cell string, m *mixture.Pooled) {
	d := os.Getenv("RELABEL_CALDUMP")
	if d == "" {
		return
	}
	f, err := os.Create(filepath.Join(d, strings.ReplaceAll(cell, "/", "__")+".pooled"))
	if err != nil {
		panic(err) // a developer's tool: the folder must exist
	}
	defer f.Close()
	fmt.Fprintf(f, "%d\t%.6g\t%.6g\n", m.C, m.Structure(), m.LogLik)
	for _, tr := range [][]float64{m.TOwn, m.T} {
		for k := 0; k < len(tr); k += m.C {
			for l, v := range tr[k : k+m.C] {
				if l > 0 {
					fmt.Fprint(f, "\t")
				}
				fmt.Fprintf(f, "%.6g", v)
			}
			fmt.Fprintln(f)
		}
	}
}
