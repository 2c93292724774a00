package gpu

import (
	"strings"
	"testing"

	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
)

func TestBackends(t *testing.T) {
	s, c, desc, err := Backends("cpu")
	if err != nil || s != (knn.CPU{}) || c != (llc.CPU{}) || !strings.HasPrefix(desc, "cpu (") {
		t.Errorf("cpu: %T %T %q %v", s, c, desc, err)
	}
	for _, d := range []string{"", "auto"} {
		s, _, desc, err := Backends(d)
		if err != nil {
			t.Fatalf("%q: %v", d, err)
		}
		if _, cuda := s.(Searcher); cuda != Available() || strings.HasPrefix(desc, "cuda") != Available() {
			t.Errorf("%q: %T %q with CUDA available = %v", d, s, desc, Available())
		}
	}
	if _, _, _, err := Backends("cuda"); (err == nil) != Available() {
		t.Errorf("cuda: %v with CUDA available = %v", err, Available())
	}
	if _, _, _, err := Backends("tpu"); err == nil || !strings.Contains(err.Error(), `"tpu"`) {
		t.Errorf("tpu: %v, want an error naming it", err)
	}
}

func TestResolveRounds(t *testing.T) {
	k, err := Resolve("cpu")
	if err != nil || k.Rounder != (engine.CPU{}) {
		t.Errorf("cpu: rounds %T, %v", k.Rounder, err)
	}
	for _, d := range []string{"", "auto"} {
		k, err := Resolve(d)
		if err != nil {
			t.Fatalf("%q: %v", d, err)
		}
		if _, cuda := k.Rounder.(Rounds); cuda != Available() {
			t.Errorf("%q: rounds %T with CUDA available = %v", d, k.Rounder, Available())
		}
	}
}
