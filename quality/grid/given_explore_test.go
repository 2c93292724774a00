package grid

import (
	"encoding/gob"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/evaluate"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
	"github.com/relabel/relabel/transforms/mixture"
	"github.com/relabel/relabel/transforms/noise"
)

var (
	harm      = flag.String("harm", "", "own-label exploration: cache dir for engine states")
	harmSets  = flag.String("harm.sets", "sklearn_digits,satellite,pendigits,letter", "datasets")
	harmNoise = flag.String("harm.noise", "clean,sym-0.05,sym-0.1,pair-0.1,pair-0.2,idn-0.1,idn-0.2,sym-0.4,idn-0.4,pair-0.45,sym-0.6", "noises")
)

type harmRun struct {
	States   mixture.States
	TOwn     []float64
	Open     bool
	Truth    []int32
	Given    []int32
	Vote     []int32
	C        int
	Temp     float64
	Baseline evaluate.Report
	NbK      int
	NbIndex  []int32 // item indices, -1 none
	NbWeight []float64
}

func harmNeighbours(t *testing.T, cell Cell, r *harmRun) {
	if r.NbIndex != nil {
		return
	}
	ds, err := loadDataset(cell.Dir)
	if err != nil {
		t.Fatal(err)
	}
	o := options.Defaults()
	eo, err := o.Engine(ds.c)
	if err != nil {
		t.Fatal(err)
	}
	feats := append([]float32(nil), ds.x...)
	mean, std := engine.Moments(feats, ds.n, ds.d)
	engine.Standardise(feats, ds.d, mean, std)
	cands := engine.SelectCandidates(ds.ids, eo.Candidates, eo.Mixture.Seed)
	nb, err := engine.Neighbours(feats, ds.ids, ds.d, cands, eo, engine.Backends{Searcher: knn.CPU{}, Coder: llc.CPU{}})
	if err != nil {
		t.Fatal(err)
	}
	r.NbK = nb.K
	r.NbIndex = make([]int32, len(nb.Index))
	for x, c := range nb.Index {
		r.NbIndex[x] = -1
		if c >= 0 {
			r.NbIndex[x] = int32(cands[c])
		}
	}
	r.NbWeight = nb.Weight
}

func harmCell(t *testing.T, set, nz string) Cell {
	dir := filepath.Join(*dataDir, set)
	c := Cell{Dataset: set, Dir: dir, Noise: nz}
	var kind string
	var rate float64
	if nz == "clean" {
		kind, rate = "sym", 0
	} else {
		i := strings.LastIndex(nz, "-")
		kind = nz[:i]
		fmt.Sscanf(nz[i+1:], "%g", &rate)
	}
	for _, f := range []string{"noisy-" + nz + ".parquet", "noisy-" + nz + ".arrow", "noisy-" + nz + ".i32"} {
		if exists(filepath.Join(dir, f)) {
			c.File = filepath.Join(dir, f)
			return c
		}
	}
	k, err := noise.ParseKind(kind)
	if err != nil {
		t.Fatal(err)
	}
	c.Generate = noise.Params{Kind: k, Rate: rate, Seed: NoiseSeed}
	return c
}

func harmLoad(t *testing.T, cell Cell) *harmRun {
	path := filepath.Join(*harm, strings.ReplaceAll(cell.Name(), "/", "__")+".gob")
	if f, err := os.Open(path); err == nil {
		defer f.Close()
		var r harmRun
		if err := gob.NewDecoder(f).Decode(&r); err == nil {
			if r.NbIndex == nil {
				harmNeighbours(t, cell, &r)
				harmSave(t, path, &r)
			}
			return &r
		}
	}
	ds, g := loadCell(t, cell)
	opts := options.Defaults()
	eo, err := opts.Engine(ds.c)
	if err != nil {
		t.Fatal(err)
	}
	r := &harmRun{Truth: ds.truth, Given: g.single, Vote: g.vote(ds), C: ds.c}
	eo.Given = false // the rules read the rounds' final states
	eo.OnPooled = func(m *mixture.Pooled) {
		r.Open = eo.Mixture.PooledOpen(m)
		r.TOwn = m.LabelTransition()
	}
	res, err := engine.Run(&engine.Data{Keys: ds.ids, D: ds.d, Features: ds.x, Labels: g.labels, LabelOff: g.off}, eo, engine.Backends{})
	if err != nil {
		t.Fatal(err)
	}
	r.States = res.States
	var tOwn []float64
	if r.Open {
		tOwn = r.TOwn
	}
	cal := resultio.Calibration{Auto: true}
	cal = resolve(cal, &res.States, g.labels, g.off, tOwn, ds.c)
	r.Temp = cal.Temperature
	in := Inputs(ds.c, ds.truth, g.single, &res.States, cal)
	r.Baseline, err = evaluate.Evaluate(in)
	if err != nil {
		t.Fatal(err)
	}
	harmNeighbours(t, cell, r)
	harmSave(t, path, r)
	return r
}

func harmSave(t *testing.T, path string, r *harmRun) {
	os.MkdirAll(*harm, 0o755)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := gob.NewEncoder(f).Encode(r); err != nil {
		t.Fatal(err)
	}
}

// rule maps a run to output labels and confidences.
type rule struct {
	name string
	f    func(r *harmRun) ([]int32, []float32)
}

func score(r *harmRun, clean []int32, prob []float32) (acc, changed, ece float64) {
	n := len(r.Truth)
	ok := make([]bool, n)
	for i := range n {
		if clean[i] == r.Truth[i] {
			acc++
			ok[i] = true
		}
		if clean[i] != r.Given[i] {
			changed++
		}
	}
	e, _ := evaluate.ECE(prob, ok, 15)
	return acc / float64(n), changed / float64(n), float64(e)
}

// post returns item i's tempered posterior over its kept classes.
func post(r *harmRun, i int, temp float64) ([]int32, []float64) {
	st := &r.States
	lo, hi := st.ItemOff[i], st.ItemOff[i+1]
	q := mixture.Temper(nil, st.Pi[lo:hi], temp)
	out := make([]float64, len(q))
	for k, v := range q {
		out[k] = float64(v)
	}
	return st.Class[lo:hi], out
}

// ownBayes is the own-label Bayes rule: EM over the class-level transition
// A(c, g) of the given labels, with each item's tempered posterior as its
// prior over clean classes (floored so that the given label is always a
// candidate).
func ownBayes(iters int, alpha, floor, power float64) func(r *harmRun) ([]int32, []float32) {
	return evBayes(iters, alpha, floor, power, func(r *harmRun, i int) ([]int32, []float64) { return post(r, i, r.Temp) })
}

// nbEvidence is the weighted mean of item i's neighbours' posteriors at
// temperature temp (0: the run's).
func nbEvidence(temp float64) func(r *harmRun, i int) ([]int32, []float64) {
	return func(r *harmRun, i int) ([]int32, []float64) {
		if temp == 0 {
			temp = r.Temp
		}
		m := map[int32]float64{}
		ws := 0.0
		for j := 0; j < r.NbK; j++ {
			x := r.NbIndex[i*r.NbK+j]
			if x < 0 {
				continue
			}
			w := r.NbWeight[i*r.NbK+j]
			cls, q := post(r, int(x), temp)
			for k, c := range cls {
				m[c] += w * q[k]
			}
			ws += w
		}
		var cls []int32
		var q []float64
		for c := int32(0); c < int32(r.C); c++ {
			if v, ok := m[c]; ok {
				cls = append(cls, c)
				q = append(q, v/ws)
			}
		}
		return cls, q
	}
}

// likBayes picks the evidence temperature whose EM fit gives the given
// labels the highest likelihood.
func likBayes(iters int, alpha float64, temps []float64) func(r *harmRun) ([]int32, []float32) {
	return func(r *harmRun) ([]int32, []float32) {
		var bc []int32
		var bp []float32
		best := math.Inf(-1)
		bt := 0.0
		for _, tp := range temps {
			var ll float64
			c, p := evBayesLL(iters, alpha, 1e-6, 1, nbEvidence(tp), &ll)(r)
			if ll > best {
				best, bc, bp, bt = ll, c, p, tp
			}
		}
		lastT = bt
		return bc, bp
	}
}

var lastT float64

// calBayes tempers the neighbour evidence at the temperature under which
// it best predicts the run's own clean labels (argmax of each item's
// posterior), then fits A by EM.
func calBayes(iters int, temps []float64, mk func(float64) func(r *harmRun, i int) ([]int32, []float64)) func(r *harmRun) ([]int32, []float32) {
	return func(r *harmRun) ([]int32, []float32) {
		bt := bestTemp(r, runTops(r), temps, mk)
		lastT = bt
		return evBayes(iters, 1, 1e-6, 1, mk(bt))(r)
	}
}

// fixBayes is calBayes iterated to a fixed point: the temperature is chosen
// again to predict the last fit's output labels instead of the rounds' top
// classes, and A refitted, up to steps times or until no label moves.
func fixBayes(iters, steps int, temps []float64, mk func(float64) func(r *harmRun, i int) ([]int32, []float64)) func(r *harmRun) ([]int32, []float32) {
	return func(r *harmRun) ([]int32, []float32) {
		hat := runTops(r)
		var clean []int32
		var prob []float32
		for step := 0; step < steps; step++ {
			bt := bestTemp(r, hat, temps, mk)
			lastT = bt
			clean, prob = evBayes(iters, 1, 1e-6, 1, mk(bt))(r)
			moved := 0
			for i := range hat {
				if clean[i] != hat[i] {
					moved++
				}
			}
			copy(hat, clean)
			if moved == 0 {
				break
			}
		}
		return clean, prob
	}
}

// runTops is every item's top class after the rounds (its given label
// where its state is empty).
func runTops(r *harmRun) []int32 {
	hat := make([]int32, len(r.Truth))
	for i := range hat {
		cls, _ := post(r, i, 1)
		hat[i] = r.Given[i]
		if len(cls) > 0 {
			hat[i] = cls[0]
		}
	}
	return hat
}

// bestTemp is the temperature of temps at which the evidence mk makes
// best predicts the labels hat (the first of equal log-likelihoods).
func bestTemp(r *harmRun, hat []int32, temps []float64, mk func(float64) func(r *harmRun, i int) ([]int32, []float64)) float64 {
	best, bt := math.Inf(-1), 0.0
	for _, tp := range temps {
		ev := mk(tp)
		ll := 0.0
		for i := range hat {
			cls, q := ev(r, i)
			v := 1e-6
			for k, c := range cls {
				if c == hat[i] {
					v += q[k]
				}
			}
			ll += math.Log(v)
		}
		if ll > best {
			best, bt = ll, tp
		}
	}
	return bt
}

// nbRawEvidence is the weighted mean of item i's neighbours' raw pi, then
// tempered at temp.
func nbRawEvidence(temp float64) func(r *harmRun, i int) ([]int32, []float64) {
	return func(r *harmRun, i int) ([]int32, []float64) {
		cls, q := nbEvidence(1)(r, i)
		f := make([]float32, len(q))
		for k, v := range q {
			f[k] = float32(v)
		}
		tp := temp
		if tp == 0 {
			tp = r.Temp
		}
		f = mixture.Temper(nil, f, tp)
		for k, v := range f {
			q[k] = float64(v)
		}
		return cls, q
	}
}

func evBayes(iters int, alpha, floor, power float64, ev func(r *harmRun, i int) ([]int32, []float64)) func(r *harmRun) ([]int32, []float32) {
	var ll float64
	return evBayesLL(iters, alpha, floor, power, ev, &ll)
}

func evBayesLL(iters int, alpha, floor, power float64, ev func(r *harmRun, i int) ([]int32, []float64), ll *float64) func(r *harmRun) ([]int32, []float32) {
	return func(r *harmRun) ([]int32, []float32) {
		c := r.C
		n := len(r.Truth)
		A := make([]float64, c*c)
		for k := range c {
			for l := range c {
				if k == l {
					A[k*c+l] = 0.8
				} else {
					A[k*c+l] = 0.2 / float64(c-1)
				}
			}
		}
		type item struct {
			cls []int32
			q   []float64
		}
		items := make([]item, n)
		for i := range n {
			cls, q := ev(r, i)
			g := r.Given[i]
			found := false
			for _, x := range cls {
				found = found || x == g
			}
			cl := append([]int32(nil), cls...)
			qq := append([]float64(nil), q...)
			if !found {
				cl = append(cl, g)
				qq = append(qq, 0)
			}
			s := 0.0
			for k := range qq {
				qq[k] = math.Pow(qq[k], power)*(1-floor) + floor/float64(c)
				s += qq[k]
			}
			for k := range qq {
				qq[k] /= s
			}
			items[i] = item{cl, qq}
		}
		p := make([][]float64, n)
		for it := 0; it <= iters; it++ {
			*ll = 0
			for i := range n {
				g := r.Given[i]
				pp := make([]float64, len(items[i].q))
				s := 0.0
				for k, x := range items[i].cls {
					pp[k] = items[i].q[k] * A[int(x)*c+int(g)]
					s += pp[k]
				}
				*ll += math.Log(s)
				for k := range pp {
					pp[k] /= s
				}
				p[i] = pp
			}
			if it == iters {
				break
			}
			clear(A)
			for i := range n {
				g := r.Given[i]
				for k, x := range items[i].cls {
					A[int(x)*c+int(g)] += p[i][k]
				}
			}
			for k := range c {
				row := A[k*c : (k+1)*c]
				s := 0.0
				for l := range row {
					row[l] += alpha / float64(c)
					s += row[l]
				}
				for l := range row {
					row[l] /= s
				}
			}
		}
		clean := make([]int32, n)
		prob := make([]float32, n)
		for i := range n {
			b := 0
			for k := range p[i] {
				if p[i][k] > p[i][b] {
					b = k
				}
			}
			clean[i], prob[i] = items[i].cls[b], float32(p[i][b])
		}
		return clean, prob
	}
}

func TestHarm(t *testing.T) {
	if *harm == "" {
		t.Skip("-harm")
	}
	rules := []rule{
		{"base", func(r *harmRun) ([]int32, []float32) {
			n := len(r.Truth)
			clean := make([]int32, n)
			prob := make([]float32, n)
			for i := range n {
				cls, q := post(r, i, r.Temp)
				clean[i], prob[i] = cls[0], float32(q[0])
				if len(cls) == 0 {
					clean[i] = r.Given[i]
				}
			}
			return clean, prob
		}},
		{"calT", calBayes(30, []float64{0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.7, 1}, nbEvidence)},
		{"fix2", fixBayes(30, 2, []float64{0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.7, 1}, nbEvidence)},
		{"fix20", fixBayes(30, 20, []float64{0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.7, 1}, nbEvidence)},
		{"pow1", powBayes(1)}, {"pow2", powBayes(2)}, {"pow3", powBayes(3)}, {"pow5", powBayes(5)}, {"pow10", powBayes(10)},
		{"engine", engineRule(func(f *mixture.GivenFit) { lastT = f.T })},
	}
	_ = os.Getenv
	for _, set := range strings.Split(*harmSets, ",") {
		for _, nz := range strings.Split(*harmNoise, ",") {
			cell := harmCell(t, set, nz)
			r := harmLoad(t, cell)
			line := fmt.Sprintf("%-16s %-9s given %.4f vote %.4f T %.2f open %v |", set, nz, agreeFrac(r.Truth, r.Given), agreeFrac(r.Truth, r.Vote), r.Temp, r.Open)
			for _, ru := range rules {
				cl, pr := ru.f(r)
				a, ch, e := score(r, cl, pr)
				line += fmt.Sprintf(" %s %.4f ch %.3f ece %.3f |", ru.name, a, ch, e)
				if strings.HasPrefix(ru.name, "cal") || strings.HasPrefix(ru.name, "fix") || ru.name == "engine" {
					line += fmt.Sprintf(" T=%.2f |", lastT)
				}
			}
			t.Log(line)
		}
	}
}

// powBayes is the engine's fit with the evidence's power fixed at p
// instead of chosen by the given labels' likelihood (mixture.FitGiven).
func powBayes(p float64) func(r *harmRun) ([]int32, []float32) {
	return func(r *harmRun) ([]int32, []float32) {
		b := harmBatch(r)
		own := make([]int32, b.N)
		for i := range own {
			own[i], _ = r.States.Top(i)
		}
		score := make([]float64, len(mixture.GivenTemperatures))
		engine.GivenScores(b, own, 2, score)
		t := mixture.GivenTemperature(score)
		ev, given := engine.GivenEvidence(b, t, 2)
		f, err := mixture.FitGivenPrior(ev, given, r.C, t, p, nil)
		if err != nil {
			panic(err)
		}
		return harmTops(engine.GivenStates(b, f, 5, 2))
	}
}

// engineRule is the default given-label model (engine.FitGivenBatch, then
// its posteriors), note told of each fit.
func engineRule(note func(f *mixture.GivenFit)) func(r *harmRun) ([]int32, []float32) {
	return func(r *harmRun) ([]int32, []float32) {
		b := harmBatch(r)
		f, err := engine.FitGivenBatch(b, r.C, 1, 2)
		if err != nil {
			panic(err)
		}
		note(f)
		return harmTops(engine.GivenStates(b, f, 5, 2))
	}
}

// harmBatch is the given-label model's view of a cached run: its final
// states and neighbours, keyed by item index.
func harmBatch(r *harmRun) engine.GivenBatch {
	k := r.NbK
	return engine.GivenBatch{N: len(r.Truth), K: k, Own: &r.States,
		Neighbour: func(i, j int) (*mixture.States, int, float64) {
			if x := r.NbIndex[i*k+j]; x >= 0 {
				return &r.States, int(x), r.NbWeight[i*k+j]
			}
			return nil, 0, 0
		},
		Key:   func(i int) int64 { return int64(i) },
		Given: func(i int) int32 { return r.Given[i] },
	}
}

// harmTops is every item's top class and its probability.
func harmTops(st mixture.States) ([]int32, []float32) {
	n := st.Len()
	clean := make([]int32, n)
	prob := make([]float32, n)
	for i := range n {
		clean[i], prob[i] = st.Top(i)
	}
	return clean, prob
}
