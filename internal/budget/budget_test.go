package budget

import (
	"errors"
	"math"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFitNamesLargestTerm(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Sizes
		flag string
	}{
		{"wide features", Sizes{Rows: 300, D: 100_000_000, C: 10, C0: 5, K: 10, L: 10, N: 9}, "input"},
		{"huge k", Sizes{Rows: 1_000_000, D: 8, C: 10, C0: 5, K: 100_000, L: 10, N: 9}, "k"},
		{"huge n", Sizes{Rows: 100, D: 8, C: 10, C0: 5, K: 10, L: 1000, N: 1 << 30}, "n"},
		{"many classes", Sizes{Rows: 100, D: 8, C: math.MaxInt32, C0: 5, K: 10, L: 10, N: 9}, "classes"},
	} {
		e := Of(tc.s)
		err := Fit(e, 24<<30)
		var be *Error
		if !errors.As(err, &be) {
			t.Errorf("%s: estimate %s fits 24 GiB, want refused", tc.name, Bytes(e.Peak))
			continue
		}
		if be.Flag != tc.flag {
			t.Errorf("%s: refused naming %q, want %q (%s)", tc.name, be.Flag, tc.flag, be.Msg)
		}
		for _, want := range []string{"24.0 GiB", Bytes(e.Peak)} {
			if !strings.Contains(be.Msg, want) {
				t.Errorf("%s: message %q lacks %q", tc.name, be.Msg, want)
			}
		}
	}
	small := Of(Sizes{Rows: 1797, D: 64, C: 10, C0: 5, K: 10, L: 10, N: 9})
	if err := Fit(small, 24<<30); err != nil {
		t.Errorf("digits-sized run refused: %v", err)
	}
	if err := Fit(small, 0); err != nil {
		t.Errorf("unknown memory refuses: %v", err)
	}
}

// TestOfMonotone: more of anything never lowers the estimate, and the
// estimate never wraps negative.
func TestOfMonotone(t *testing.T) {
	base := Sizes{Rows: 1000, D: 32, C: 10, C0: 5, K: 10, L: 10, N: 9}
	b := Of(base).Peak
	grow := []func(s *Sizes){
		func(s *Sizes) { s.Rows *= 10 }, func(s *Sizes) { s.D *= 10 }, func(s *Sizes) { s.C *= 10 },
		func(s *Sizes) { s.C0 *= 2 }, func(s *Sizes) { s.K *= 10 }, func(s *Sizes) { s.L *= 10 },
		func(s *Sizes) { s.N *= 10 }, func(s *Sizes) { s.Annotations = 1e6 },
	}
	for i, g := range grow {
		s := base
		g(&s)
		if p := Of(s).Peak; p <= b {
			t.Errorf("growth %d: estimate %d, not above %d", i, p, b)
		}
	}
	huge := Of(Sizes{Rows: math.MaxInt64, D: math.MaxInt32, K: math.MaxInt32})
	if huge.Peak <= 0 || huge.Output <= 0 {
		t.Errorf("huge sizes: peak %d, output %d; want saturated, positive", huge.Peak, huge.Output)
	}
}

// TestSynthRefusesHugeD: relabel synth --d 1000000000 (issue 35: "fatal
// error: runtime: out of memory") is refused naming --d.
func TestSynthRefusesHugeD(t *testing.T) {
	e := Synth(100000, 1_000_000_000, 20, 0, 1, 2)
	var be *Error
	if err := Fit(e, 24<<30); !errors.As(err, &be) || be.Flag != "d" {
		t.Errorf("--d 1e9: err %v, want refused naming d", err)
	}
	if err := Fit(Synth(100000, 64, 20, 0, 1, 2), 24<<30); err != nil {
		t.Errorf("the default synth refused: %v", err)
	}
}

func TestMemory(t *testing.T) {
	m := Memory()
	if m <= 0 {
		t.Skip("no /proc/meminfo here")
	}
	prev := debug.SetMemoryLimit(m / 4)
	defer debug.SetMemoryLimit(prev)
	if got := Memory(); got != m/4 {
		t.Errorf("with GOMEMLIMIT %d: Memory = %d", m/4, got)
	}
}
