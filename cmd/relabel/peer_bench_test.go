package main

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/relabel/relabel/io/shardio"
)

// sklearnKNN is the peer's kNN step: scikit-learn's exact
// 10-NN graph (11 with the point itself) of the z-scored features, read from
// a raw float32 file. It prints the seconds kneighbors took.
const sklearnKNN = `
import sys, time, numpy as np
from sklearn.neighbors import NearestNeighbors
n, d = int(sys.argv[2]), int(sys.argv[3])
x = np.fromfile(sys.argv[1], dtype=np.float32).reshape(n, d)
t0 = time.time()
NearestNeighbors(n_neighbors=11).fit(x).kneighbors(x)
print(time.time() - t0)
`

// BenchmarkVsSklearn measures, in one run on the same machine, `relabel run`
// with its defaults on fashion_mnist_pca50 noisy-idn-0.4 (70,000 x 50, the
// default pure-Go build, the embedded runner, whole process) against
// scikit-learn's exact 10-NN graph on the same z-scored features (whole
// python3 process, and kneighbors alone), and reports the ratio relabel /
// sklearn. It skips without ../shared or without
// python3-sklearn (apt-get install python3-sklearn). Slow: run it alone,
// go test ./cmd/relabel -run '^$' -bench VsSklearn -benchtime 1x.
func BenchmarkVsSklearn(b *testing.B) {
	in := filepath.Join(sharedData, "fashion_mnist_pca50/noisy-idn-0.4.parquet")
	if _, err := os.Stat(in); err != nil {
		b.Skipf("development data absent (%v)", err)
	}
	py := pythonWithSklearn()
	if py == "" {
		b.Skip("python3-sklearn absent: apt-get install python3-sklearn (or set RELABEL_PYTHON)")
	}
	ctx := context.Background()
	shards, err := shardio.Scan(ctx, in, shardio.ReadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	rows, err := shardio.ReadAll(ctx, shards, shardio.ReadOptions{Classes: 10, D: shards[0].D})
	if err != nil {
		b.Fatal(err)
	}
	d := shards[0].D
	var x []float32
	for _, r := range rows {
		x = append(x, r.Features...)
	}
	n := len(x) / d
	zscore(x, n, d)
	f32 := filepath.Join(b.TempDir(), "x.f32")
	buf := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
	}
	if err := os.WriteFile(f32, buf, 0o644); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		outb, err := exec.Command(py, "-c", sklearnKNN, f32, strconv.Itoa(n), strconv.Itoa(d)).Output()
		if err != nil {
			b.Fatalf("sklearn: %v", err)
		}
		peer := time.Since(t0)
		knn, _ := strconv.ParseFloat(strings.TrimSpace(string(outb)), 64)

		out := filepath.Join(b.TempDir(), "out")
		t1 := time.Now()
		if msg, err := exec.Command(relabelBin, "run", "--input", in, "--output", out, "--report=false").CombinedOutput(); err != nil {
			b.Fatalf("relabel: %v: %s", err, tail(string(msg), 500))
		}
		ours := time.Since(t1)
		b.ReportMetric(ours.Seconds(), "relabel-s")
		b.ReportMetric(peer.Seconds(), "sklearn-s")
		b.ReportMetric(knn, "sklearn-kneighbors-s")
		b.ReportMetric(ours.Seconds()/peer.Seconds(), "relabel/sklearn")
	}
}

// pythonWithSklearn finds a Python with scikit-learn: $RELABEL_PYTHON, the
// python3 on PATH, or Debian's (a pyenv shim on PATH may lack the package).
func pythonWithSklearn() string {
	for _, py := range []string{os.Getenv("RELABEL_PYTHON"), "python3", "/usr/bin/python3"} {
		if py != "" && exec.Command(py, "-c", "import sklearn, numpy").Run() == nil {
			return py
		}
	}
	return ""
}

// zscore standardises each of the d columns of the n x d matrix x in place.
func zscore(x []float32, n, d int) {
	for j := 0; j < d; j++ {
		var s, ss float64
		for i := 0; i < n; i++ {
			v := float64(x[i*d+j])
			s += v
			ss += v * v
		}
		mean := s / float64(n)
		sd := math.Sqrt(max(ss/float64(n)-mean*mean, 0))
		if sd == 0 {
			sd = 1
		}
		for i := 0; i < n; i++ {
			x[i*d+j] = float32((float64(x[i*d+j]) - mean) / sd)
		}
	}
}
