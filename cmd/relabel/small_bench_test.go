package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/io/synthio"
	"github.com/relabel/relabel/transforms/synth"
)

// BenchmarkSmallExact pairs, in one run on the same machine, `relabel run`
// on a small input with the peer a user would run instead: scikit-learn's
// exact 10-NN graph of the z-scored features, the kNN vote and cleanlab's
// find_label_issues on the vote fractions (scripts/peer_weak.py --knn-only,
// one whole python3 process). The input is synthetic at the shape of the
// small-input complaint: 9,300 rows of d = 256, 10 classes, 40% symmetric
// noise (synth's defaults but smallJitter), exact mode, the defaults ("default") and --head off ("head=off").
// relabel runs in this process (the embedded runner, LOOPBACK: every stage's
// work is this process's, so that -cpuprofile sees all of it); the peer runs
// before it in each iteration. It reports the wall ratio relabel/peer (the
// target: <= 1), both accuracies against the truth, and relabel's wall and
// CPU seconds. It skips without python3-sklearn. Slow: run it alone,
//
//	go test ./cmd/relabel -run '^$' -bench SmallExact -benchtime 1x [-cpuprofile cpu.out]
func BenchmarkSmallExact(b *testing.B) {
	py := pythonWithSklearn()
	if py == "" {
		b.Skip("python3-sklearn absent: apt-get install python3-sklearn (or set RELABEL_PYTHON)")
	}
	ctx := context.Background()
	in := b.TempDir()
	p := synth.DefaultParams(9300, 256, 10, 0.4, 1)
	p.Jitter = smallJitter
	g, err := synth.New(p)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := synthio.Write(ctx, in, g, synthio.Options{Shards: 1, BatchRows: 16384, Format: shardio.Parquet}); err != nil {
		b.Fatal(err)
	}
	glob := filepath.Join(in, "*.parquet")
	truth := filepath.Join(in, "truth.i32")
	peerArgs := peerFiles(b, ctx, glob, truth, b.TempDir())
	for _, head := range []string{"default", "off"} {
		name := "default"
		if head != "default" {
			name = "head=" + head
		}
		b.Run(name, func(b *testing.B) {
			args := []string{"run", "--input", glob, "--neighbours", "exact", "--report=false"}
			if head != "default" {
				args = append(args, "--head", head)
			}
			var wall, cpu, peerWall, acc, peerAcc float64
			n := 0
			for ; b.Loop(); n++ {
				t0 := time.Now()
				outb, err := exec.Command(py, peerArgs...).Output()
				if err != nil {
					b.Fatalf("peer: %v", err)
				}
				peerWall += time.Since(t0).Seconds()
				var p struct {
					CleanlabKNN float64 `json:"cleanlab_knn"`
				}
				if err := json.Unmarshal(outb, &p); err != nil {
					b.Fatalf("peer output %q: %v", outb, err)
				}
				peerAcc = p.CleanlabKNN

				out := filepath.Join(b.TempDir(), fmt.Sprint("out", n))
				t1, c1 := time.Now(), cpuSeconds()
				if code := dispatch(ctx, append(args, "--output", out), io.Discard, io.Discard); code != 0 {
					b.Fatalf("relabel %v: exit %d", args, code)
				}
				wall += time.Since(t1).Seconds()
				cpu += cpuSeconds() - c1
				acc = cleanedAccuracy(b, ctx, out, truth)
			}
			b.ReportMetric(wall/float64(n), "relabel-s")
			b.ReportMetric(cpu/float64(n), "relabel-cpu-s")
			b.ReportMetric(peerWall/float64(n), "peer-s")
			b.ReportMetric(wall/peerWall, "relabel/peer")
			b.ReportMetric(acc, "relabel-acc")
			b.ReportMetric(peerAcc, "peer-acc")
		})
	}
}

// smallJitter is BenchmarkSmallExact's isotropic noise: at synth's default
// (0.6) d = 256 leaves no label to get wrong (relabel 1.000, the peer
// .985); at 1.4 the peer's cleaning is .94 and its kNN vote .91, as on
// the complaint's real set (.919).
const smallJitter = 1.4

// peerFiles writes the input's features (raw float32, row-major), given
// labels and true labels (raw int32), all in the input's row order, under
// dir, and returns scripts/peer_weak.py's arguments for them.
func peerFiles(b *testing.B, ctx context.Context, glob, truthPath, dir string) []string {
	b.Helper()
	shards, err := shardio.Scan(ctx, glob, shardio.ReadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	rows, err := shardio.ReadAll(ctx, shards, shardio.ReadOptions{Classes: 10, D: shards[0].D})
	if err != nil {
		b.Fatal(err)
	}
	byID, err := resultio.ReadI32(ctx, truthPath)
	if err != nil {
		b.Fatal(err)
	}
	var x, y, truth bytes.Buffer
	for _, r := range rows {
		for _, v := range r.Features {
			binary.Write(&x, binary.LittleEndian, math.Float32bits(v))
		}
		for i, id := range r.IDs {
			if r.LabelOff[i+1]-r.LabelOff[i] != 1 {
				b.Fatalf("row %d: %d labels, want 1", id, r.LabelOff[i+1]-r.LabelOff[i])
			}
			binary.Write(&y, binary.LittleEndian, r.Labels[r.LabelOff[i]])
			binary.Write(&truth, binary.LittleEndian, byID[id])
		}
	}
	files := []string{filepath.Join(dir, "x.f32"), filepath.Join(dir, "y.i32"), filepath.Join(dir, "truth.i32")}
	for i, buf := range []*bytes.Buffer{&x, &y, &truth} {
		if err := os.WriteFile(files[i], buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return []string{"../../scripts/peer_weak.py", files[0], fmt.Sprint(shards[0].D), files[1], files[2], "--knn-only"}
}

// cleanedAccuracy is relabel eval's accuracy of the cleaned labels in out
// against the truth.
func cleanedAccuracy(b *testing.B, ctx context.Context, out, truth string) float64 {
	b.Helper()
	var stdout, stderr bytes.Buffer
	if code := dispatch(ctx, []string{"eval", "--output", out, "--truth", truth, "--json", "--report=false"}, &stdout, &stderr); code != 0 {
		b.Fatalf("relabel eval: exit %d: %s", code, stderr.String())
	}
	var e struct {
		Report struct {
			CleanedAccuracy float64 `json:"cleaned_accuracy"`
		} `json:"report"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &e); err != nil {
		b.Fatalf("relabel eval output: %v", err)
	}
	return e.Report.CleanedAccuracy
}

// cpuSeconds is this process's user and system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
