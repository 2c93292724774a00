package reportio

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/shardio"
)

// BenchmarkBuild reports the report's pass over an output of 200k rows in 4
// Arrow shards beside the reference of reading the same record batches with
// arrow-go and doing nothing with them ("read"): the ratio of the two is the
// cost of the report's counting over the read it cannot avoid.
func BenchmarkBuild(b *testing.B) {
	const rows = 200_000
	f := randomFixture(11, 10, rows, []shardio.Format{shardio.ArrowFile, shardio.ArrowFile, shardio.ArrowFile, shardio.ArrowFile}, nil, false, false)
	dir := b.TempDir()
	sum := f.write(b, dir, nil)
	ctx := context.Background()
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n := int64(0)
			for _, sh := range sum.Shards {
				fh, err := os.Open(filepath.Join(dir, sh.Output))
				if err != nil {
					b.Fatal(err)
				}
				r, err := ipc.NewFileReader(fh, ipc.WithAllocator(memory.DefaultAllocator))
				if err != nil {
					b.Fatal(err)
				}
				for i := 0; i < r.NumRecords(); i++ {
					rec, err := r.RecordBatchAt(i)
					if err != nil {
						b.Fatal(err)
					}
					n += rec.NumRows()
					rec.Release()
				}
				r.Close()
				fh.Close()
			}
			if n != rows {
				b.Fatalf("read %d rows", n)
			}
		}
		b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("report", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Build(ctx, dir, Options{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
}
