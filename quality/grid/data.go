package grid

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/evaluate"
	"github.com/relabel/relabel/transforms/noise"
)

// VoteK is the K of the kNN-vote baseline, on z-scored features: the data
// README's peers use it.
const VoteK = 10

// NoiseSeed seeds the noise the harness generates (every cell that has no
// file in the data folder), so that every run of the grid scores the same
// labels.
const NoiseSeed = 1

// Peers are the data README's reference accuracies for one cell.
type Peers struct {
	// KNN is the K = 10 majority vote, Cleanlab cleanlab's find_label_issues
	// with flagged labels replaced by the kNN argmax; NaN when not listed.
	KNN, Cleanlab float64
	// Logreg is cleanlab on cross-validated logistic-regression
	// probabilities (the linear model's cleaning): the data README lists
	// it for the high-noise cells only; NaN elsewhere.
	Logreg float64
}

// Best is the best peer figure listed (NaN when none).
func (p Peers) Best() float64 {
	b := nan
	for _, v := range []float64{p.KNN, p.Cleanlab, p.Logreg} {
		if !math.IsNaN(v) && (math.IsNaN(b) || v > b) {
			b = v
		}
	}
	return b
}

// ReadPeers parses the peers tables of the data README (dataDir/README.md):
// the rows "| dataset | sym 0.4 | noisy | kNN | cleanlab |" and, for the
// high-noise cells, "| dataset | pair 0.45 | noisy | kNN | cleanlab |
// cleanlab (logreg) |", keyed by cell name ("letter/sym-0.4"). Reading the figures from the README, rather than
// copying them, keeps the comparison with whatever data is checked out.
func ReadPeers(dataDir string) (map[string]Peers, error) {
	path := filepath.Join(dataDir, "README.md")
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("grid: %w", err)
	}
	defer f.Close()
	out := map[string]Peers{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		cols := strings.Split(strings.Trim(strings.TrimSpace(sc.Text()), "|"), "|")
		if len(cols) != 5 && len(cols) != 6 {
			continue
		}
		for i := range cols {
			cols[i] = strings.TrimSpace(cols[i])
		}
		kind, rate, ok := strings.Cut(cols[1], " ")
		if !ok {
			continue
		}
		if _, err := noise.ParseKind(kind); err != nil {
			continue
		}
		knn, err1 := strconv.ParseFloat(cols[3], 64)
		cl, err2 := strconv.ParseFloat(cols[4], 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("grid: %s line %d: peer figures %q, %q are not numbers", path, line, cols[3], cols[4])
		}
		p := Peers{KNN: knn, Cleanlab: cl, Logreg: nan}
		if len(cols) == 6 {
			if p.Logreg, err = strconv.ParseFloat(cols[5], 64); err != nil {
				return nil, fmt.Errorf("grid: %s line %d: peer figure %q is not a number", path, line, cols[5])
			}
		}
		out[cols[0]+"/"+kind+"-"+rate] = p
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("grid: %s: %w", path, err)
	}
	return out, nil
}

// meta is the part of a dataset's meta.json the harness needs.
type meta struct {
	N int `json:"n"`
	D int `json:"d"`
	C int `json:"C"`
}

func readMeta(dir string) (meta, error) {
	var m meta
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		return m, fmt.Errorf("grid: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("grid: %s/meta.json: %w", dir, err)
	}
	if m.N < 1 || m.D < 1 || m.C < 2 {
		return m, fmt.Errorf("grid: %s/meta.json: n = %d, d = %d, C = %d", dir, m.N, m.D, m.C)
	}
	return m, nil
}

// dataset is one folder of the dev data in memory, rows in clean.parquet's
// order; every cell's labels are aligned to it by id.
type dataset struct {
	name    string
	n, d, c int
	ids     []int64
	row     map[int64]int
	x       []float32
	truth   []int32

	nbOnce sync.Once
	nb     []int32 // VoteK neighbours per row, z-scored L2 (evaluate.Neighbours)
}

// neighbours returns the baseline's neighbour lists, computed once.
func (ds *dataset) neighbours() []int32 {
	ds.nbOnce.Do(func() { ds.nb = evaluate.Neighbours(ds.x, ds.n, ds.d, VoteK, true) })
	return ds.nb
}

// vote is evaluate.KNNVote over the cached neighbours: each row takes the
// majority of its neighbours' labels, ties to the lowest class.
func (ds *dataset) vote(labels []int32) []int32 {
	nb := ds.neighbours()
	out := make([]int32, ds.n)
	count := make([]int32, ds.c)
	for i := range out {
		clear(count)
		best, top := labels[i], int32(0)
		for _, j := range nb[i*VoteK : (i+1)*VoteK] {
			if j >= 0 {
				count[labels[j]]++
			}
		}
		for c, v := range count {
			if v > top {
				best, top = int32(c), v
			}
		}
		out[i] = best
	}
	return out
}

// given is one cell's given labels, aligned to its dataset: item i's are
// labels[off[i]:off[i+1]]; single is one label per item (the majority vote
// of several).
type given struct {
	labels, off []int32
	multi       bool
	single      []int32

	voteOnce sync.Once
	knn      []int32

	cleanlabOnce sync.Once
	cl           []int32
}

func (g *given) vote(ds *dataset) []int32 {
	g.voteOnce.Do(func() { g.knn = ds.vote(g.single) })
	return g.knn
}

// cleanlab is CleanlabKNN of the (single) given labels over the baseline's
// neighbours, computed once.
func (g *given) cleanlab(ds *dataset) []int32 {
	g.cleanlabOnce.Do(func() { g.cl = CleanlabKNN(g.single, ds.neighbours(), VoteK, ds.c) })
	return g.cl
}

// cache holds what has been loaded, by absolute folder and by cell.
var cache = struct {
	sync.Mutex
	datasets map[string]*dataset
	given    map[string]*given
}{datasets: map[string]*dataset{}, given: map[string]*given{}}

// loadDataset reads dir's clean.parquet (ids, features, truth), once.
func loadDataset(dir string) (*dataset, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	cache.Lock()
	defer cache.Unlock()
	if ds, ok := cache.datasets[abs]; ok {
		return ds, nil
	}
	m, err := readMeta(dir)
	if err != nil {
		return nil, err
	}
	rows, err := readRows(filepath.Join(dir, "clean.parquet"), m.C)
	if err != nil {
		return nil, err
	}
	ds := &dataset{name: filepath.Base(abs), c: m.C, row: map[int64]int{}}
	for _, r := range rows {
		if r.Multi {
			return nil, fmt.Errorf("grid: %s/clean.parquet: a list of labels, want one true label per row", dir)
		}
		if ds.d == 0 {
			ds.d = r.D
		}
		for i, id := range r.IDs {
			l := r.Labels[r.LabelOff[i]:r.LabelOff[i+1]]
			if len(l) != 1 || l[0] < 0 {
				return nil, fmt.Errorf("grid: %s row %d: no true label", r.Shard, r.Offset+int64(i))
			}
			if _, dup := ds.row[id]; dup {
				return nil, fmt.Errorf("grid: %s row %d: id %d repeated", r.Shard, r.Offset+int64(i), id)
			}
			ds.row[id] = len(ds.ids)
			ds.ids = append(ds.ids, id)
			ds.truth = append(ds.truth, l[0])
		}
		ds.x = append(ds.x, r.Features...)
	}
	ds.n = len(ds.ids)
	if ds.n != m.N || ds.d != m.D {
		return nil, fmt.Errorf("grid: %s/clean.parquet: %d x %d, meta.json says %d x %d", dir, ds.n, ds.d, m.N, m.D)
	}
	cache.datasets[abs] = ds
	return ds, nil
}

// readRows reads every unit of the shards path matches (shardio: the
// reader relabel's pipeline uses).
func readRows(path string, c int) ([]*schemas.Rows, error) {
	ctx := context.Background()
	shards, err := shardio.Scan(ctx, path, shardio.ReadOptions{})
	if err != nil {
		return nil, fmt.Errorf("grid: %w", err)
	}
	ro := shardio.ReadOptions{Classes: c, D: shards[0].D}
	var rows []*schemas.Rows
	for _, s := range shards {
		for _, u := range s.Units {
			r, err := shardio.ReadUnit(ctx, u, ro)
			if err != nil {
				return nil, fmt.Errorf("grid: %w", err)
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// loadGiven returns cell's given labels, aligned to ds, once per cell.
func loadGiven(cell Cell, ds *dataset) (*given, error) {
	key, err := filepath.Abs(cell.Dir)
	if err != nil {
		return nil, err
	}
	key += "\x00" + cell.Noise + "\x00" + cell.File
	cache.Lock()
	g, ok := cache.given[key]
	cache.Unlock()
	if ok {
		return g, nil
	}
	g = &given{}
	switch {
	case cell.File == "":
		nd := noise.Dataset{IDs: ds.ids, Truth: ds.truth, Features: ds.x, D: ds.d, C: ds.c}
		out, err := noise.Generate(nd, cell.Generate)
		if err != nil {
			return nil, fmt.Errorf("grid: %s: %w", cell.Name(), err)
		}
		g.labels, g.off = out.Labels, out.Offsets
	case strings.HasSuffix(cell.File, ".i32"):
		t, err := resultio.ReadTruth(context.Background(), cell.File, resultio.TruthOptions{Rows: ds.n, Classes: ds.c})
		if err != nil {
			return nil, fmt.Errorf("grid: %w", err)
		}
		g.labels = t.Labels
	default:
		if err := g.readFile(cell.File, ds); err != nil {
			return nil, err
		}
	}
	if g.off == nil {
		g.off = make([]int32, ds.n+1)
		for i := range g.off {
			g.off[i] = int32(i)
		}
		g.single = g.labels
	} else {
		g.multi = true
		g.single = evaluate.MajorityVote(g.labels, g.off, ds.c)
	}
	cache.Lock()
	cache.given[key] = g
	cache.Unlock()
	return g, nil
}

// readFile reads a Parquet or Arrow file of the dataset's rows (any order,
// matched by id) with one label or a list of labels per row. Its features
// must be the clean file's: the harness runs every cell on the dataset's
// features.
func (g *given) readFile(path string, ds *dataset) error {
	rows, err := readRows(path, ds.c)
	if err != nil {
		return err
	}
	per := make([][]int32, ds.n)
	seen := 0
	for _, r := range rows {
		if r.D != ds.d {
			return fmt.Errorf("grid: %s: dimension %d, the clean file's is %d", path, r.D, ds.d)
		}
		for i, id := range r.IDs {
			j, ok := ds.row[id]
			if !ok {
				return fmt.Errorf("grid: %s row %d: id %d not in clean.parquet", path, r.Offset+int64(i), id)
			}
			if per[j] != nil {
				return fmt.Errorf("grid: %s row %d: id %d repeated", path, r.Offset+int64(i), id)
			}
			if !slices.Equal(r.Features[i*r.D:(i+1)*r.D], ds.x[j*ds.d:(j+1)*ds.d]) {
				return fmt.Errorf("grid: %s row %d: id %d has other features than in clean.parquet", path, r.Offset+int64(i), id)
			}
			per[j] = r.Labels[r.LabelOff[i]:r.LabelOff[i+1]]
			if len(per[j]) == 0 || slices.Contains(per[j], schemas.Unlabelled) {
				return fmt.Errorf("grid: %s row %d: id %d has a missing label", path, r.Offset+int64(i), id)
			}
			seen++
		}
		g.multi = g.multi || r.Multi
	}
	if seen != ds.n {
		return fmt.Errorf("grid: %s: %d rows, clean.parquet has %d", path, seen, ds.n)
	}
	if !g.multi {
		g.labels = make([]int32, ds.n)
		for i, l := range per {
			g.labels[i] = l[0]
		}
		return nil
	}
	g.off = make([]int32, 1, ds.n+1)
	for _, l := range per {
		g.labels = append(g.labels, l...)
		g.off = append(g.off, int32(len(g.labels)))
	}
	return nil
}

// nan is the missing peer figure.
var nan = math.NaN()
