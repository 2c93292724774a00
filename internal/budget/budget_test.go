package budget

import (
	"errors"
	"math"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/relabel/relabel/transforms/mixture"
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

// TestSynthRefusesHugeD: relabel synth --d 1000000000 (once "fatal
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

// TestOfMeasuredIVF: at the sizes relabel run was measured at in ivf mode
// with spill files and every option at its default (synth --d 64
// --classes 20; cmd/relabel's BenchmarkScaleRun, docs/PERFORMANCE.md), the
// estimate is within 2x of the measured peak RSS: a million rows with the
// rounds in one stage (their blocks counted once, Local), two million with
// a join per round, ten million with the streamed rounds (their states
// counted once).
func TestOfMeasuredIVF(t *testing.T) {
	p := mixture.DefaultParams(20)
	for _, tc := range []struct {
		name     string
		rows     int64
		local    bool
		streamed bool
		measured int64 // ru_maxrss, bytes
	}{
		{"1M rows, the rounds in one stage", 1_000_000, true, false, 2_002_332 << 10},
		{"2M rows, a join per round", 2_000_000, false, false, 1_660_276 << 10},
		{"10M rows, the streamed rounds", 10_000_000, false, true, 7_845_788 << 10},
	} {
		s := Sizes{Rows: tc.rows, D: 64, C: 20, C0: p.C0, K: 10, L: p.L, N: p.N, IVF: true, Spilled: true}
		if tc.local {
			s.Local = LocalRounds(tc.rows, s.K, p, 0)
		}
		if tc.streamed {
			s.Local, s.Streamed = StreamedRounds(tc.rows, s.K, p), true
		}
		e := Of(s)
		r := float64(e.Peak) / float64(tc.measured)
		t.Logf("%s: estimate %s, measured %s: %.2f", tc.name, Bytes(e.Peak), Bytes(tc.measured), r)
		if r < 0.5 || r > 2 {
			t.Errorf("%s: estimate %s, measured %s: ratio %.2f, want within 2x", tc.name, Bytes(e.Peak), Bytes(tc.measured), r)
		}
	}
}

// TestOfMeasuredLocalExact: where the exact mode runs in one stage
// (LocalExact), the estimate is within 2x of relabel run's peak RSS at the
// sizes measured (synth --classes 10, the defaults but --k; cmd/relabel's
// fittedSizes and its held-out sizes, 2026-11-29), and below the staged
// plan's, whose runner holds every stage's data encoded.
func TestOfMeasuredLocalExact(t *testing.T) {
	p := mixture.DefaultParams(10)
	for _, tc := range []struct {
		rows     int64
		d, k     int
		measured int64 // ru_maxrss, bytes
	}{
		{1797, 64, 10, 117192 << 10}, {3000, 32, 10, 116952 << 10}, {20000, 64, 10, 249920 << 10},
		{2000, 4096, 10, 702896 << 10}, {10000, 64, 50, 220740 << 10},
		{5000, 96, 15, 164668 << 10}, {1000, 2048, 5, 266 << 20}, {12000, 512, 20, 503 << 20}, {30000, 24, 30, 305 << 20},
	} {
		s := Sizes{Rows: tc.rows, D: tc.d, C: 10, C0: p.C0, K: tc.k, L: p.L, N: p.N, LocalExact: true}
		e := Of(s)
		r := float64(e.Peak) / float64(tc.measured)
		if r < 0.5 || r > 2 {
			t.Errorf("%d x %d, K %d: estimate %s, measured %s: ratio %.2f, want within 2x", tc.rows, tc.d, tc.k, Bytes(e.Peak), Bytes(tc.measured), r)
		}
		s.LocalExact = false
		if staged := Of(s); staged.Peak <= e.Peak {
			t.Errorf("%d x %d, K %d: staged estimate %s, one stage's %s: want the staged larger", tc.rows, tc.d, tc.k, Bytes(staged.Peak), Bytes(e.Peak))
		}
	}
}

// TestOfIVFTerms: the one-stage rounds' blocks count only where they
// exceed the rows' other terms (the writer's peak comes after the rounds),
// and spill files hold less in memory than shuffles kept in it.
func TestOfIVFTerms(t *testing.T) {
	for _, c0 := range []int{5, 20} {
		p := mixture.DefaultParams(100)
		p.C0, p.MaxRowEntries = c0, mixture.DefaultMaxRowEntries(c0)
		s := Sizes{Rows: 1_000_000, D: 64, C: 100, C0: c0, K: 10, L: p.L, N: p.N, IVF: true, Spilled: true}
		join := Of(s)
		s.Local = LocalRounds(s.Rows, s.K, p, 0)
		local := Of(s)
		var rows int64
		for _, term := range join.Terms {
			if strings.Contains(term.What, "rows") {
				rows += term.Bytes
			}
		}
		want := max(0, int64(float64(s.Local)*localFactor)-rows)
		if got := local.Peak - join.Peak; got < want-1 || got > want+1 {
			t.Errorf("c0 %d: the one-stage rounds add %d bytes, want %d (LocalRounds x localFactor beyond the rows' %d)", c0, got, want, rows)
		}
		s.Local, s.Spilled = 0, false
		if mem := Of(s); mem.Peak <= join.Peak {
			t.Errorf("c0 %d: shuffles in memory estimated at %s, not above the spilled %s", c0, Bytes(mem.Peak), Bytes(join.Peak))
		}
	}
}

// TestStreamedRounds: the streamed rounds hold one round's states and the
// external neighbours' places, less than every block and two rounds'
// states, linear in the rows; the estimate's term says which it counts.
func TestStreamedRounds(t *testing.T) {
	p := mixture.DefaultParams(20)
	const rows = 1_000_000
	st, lo := StreamedRounds(rows, 10, p), LocalRounds(rows, 10, p, 0)
	if st >= lo || StreamedRounds(2*rows, 10, p) != 2*st {
		t.Errorf("streamed %s against every block's %s (2x the rows: %s)", Bytes(st), Bytes(lo), Bytes(StreamedRounds(2*rows, 10, p)))
	}
	s := Sizes{Rows: rows, D: 64, C: 20, C0: p.C0, K: 10, L: p.L, N: p.N, IVF: true, Spilled: true, Local: 10 * st, Streamed: true}
	if got := Of(s).Largest().What; !strings.Contains(got, "states of 1000000 rows") {
		t.Errorf("streamed rounds' term: %q, want the rows' states named", got)
	}
}
