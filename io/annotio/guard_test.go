package annotio

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/shardio"
)

// readAnnotations scans and reads every unit of the files matching pattern.
func readAnnotations(t *testing.T, pattern string) ([]*Batch, error) {
	t.Helper()
	units, _, err := Scan(ctx, pattern, Options{Columns: DefaultColumns()})
	if err != nil {
		return nil, err
	}
	var out []*Batch
	for _, u := range units {
		b, err := ReadUnit(ctx, u, Options{Columns: DefaultColumns()})
		if err != nil {
			return nil, err
		}
		b.Shard = "" // the flipped copy has another name
		out = append(out, b)
	}
	return out, nil
}

// TestAnnotationBitFlips flips single bits all over an annotation shard
// written as Parquet: each read fails naming the file (annotio's reader goes
// through shardio's, so page checksums and chunk bounds are checked) or
// returns exactly the annotations written, never altered ones.
func TestAnnotationBitFlips(t *testing.T) {
	dir := t.TempDir()
	n := 600
	ids, anns, labs := make([]int64, n), make([]int64, n), make([]int32, n)
	for i := range ids {
		ids[i], anns[i], labs[i] = int64(i/3), int64(i%17), int32(i%5)
	}
	path := filepath.Join(dir, "a.parquet")
	if err := WriteAnnotations(ctx, blobio.Local{}, path, shardio.Parquet, ids, nil, anns, nil, labs, 200); err != nil {
		t.Fatal(err)
	}
	want, err := readAnnotations(t, path)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "flip.parquet")
	rng := rand.New(rand.NewPCG(3, 4))
	caught, same := 0, 0
	for trial := 0; trial < 200; trial++ {
		b := append([]byte(nil), orig...)
		pos := 4 + rng.IntN(len(b)-12)
		b[pos] ^= byte(1 << rng.IntN(8))
		if err := os.WriteFile(bad, b, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := readAnnotations(t, bad)
		switch {
		case err != nil:
			caught++
			if !strings.Contains(err.Error(), bad) || !strings.HasPrefix(err.Error(), "annotio: ") && !strings.Contains(err.Error(), "corrupt file") {
				t.Errorf("flip at byte %d: error does not name annotio and the file: %v", pos, err)
			}
		case reflect.DeepEqual(got, want):
			same++
		default:
			t.Errorf("flip at byte %d of %d: read succeeded with altered annotations", pos, len(b))
		}
	}
	t.Logf("200 single-bit flips: %d refused, %d harmless", caught, same)
	if caught < 130 {
		t.Errorf("only %d of 200 flips refused", caught)
	}
}
