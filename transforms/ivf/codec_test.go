package ivf

import (
	"reflect"
	"strings"
	"testing"

	"github.com/relabel/relabel/transforms/knn"
)

// TestModelCodec: a model reads back as written (appended to other bytes
// too); a truncated encoding and one whose centroids do not fit its
// partitions are refused.
func TestModelCodec(t *testing.T) {
	for _, c := range []struct {
		name string
		m    Model
	}{
		{"empty", Model{}},
		{"cosine", Model{D: 2, Centroids: []float32{0, 1, 2, 3, 4, 5}, Blocks: []int32{1, 3, 1}, Seed: 1<<63 + 5, Metric: knn.Cosine}},
	} {
		b, err := c.m.AppendBinary([]byte("prefix"))
		if err != nil {
			t.Fatal(err)
		}
		var got Model
		if err := got.UnmarshalBinary(b[len("prefix"):]); err != nil || !reflect.DeepEqual(got, c.m) {
			t.Errorf("%s: read back %+v (%v), wrote %+v", c.name, got, err, c.m)
		}
		if c.m.D == 0 {
			continue
		}
		if err := got.UnmarshalBinary(b[len("prefix") : len(b)-1]); err == nil {
			t.Errorf("%s: a truncated encoding read back", c.name)
		}
	}
	bad := Model{D: 2, Centroids: []float32{0, 1, 2}, Blocks: []int32{1, 1}}
	b, _ := bad.AppendBinary(nil)
	var got Model
	if err := got.UnmarshalBinary(b); err == nil || !strings.Contains(err.Error(), "3 centroid values for 2 partitions") {
		t.Errorf("misshapen model: %v", err)
	}
}
