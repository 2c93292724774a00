package lake

import (
	"context"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/mixture"
)

// Writing an incremental run's output files: the rows' final states (the
// update's where it touched a row, else the stored posterior's) as
// cleaned rows, in the files the plan chose.

// maxRewriteRows bounds the rows of an output file an incremental run
// rewrites: a larger one (a full run writes one output file per input file)
// is rewritten as several, which are written in parallel, and which the
// next runs rewrite only where they hold re-scored rows.
var maxRewriteRows = 1 << 18

// outFile is a file an incremental table run writes: rows of d, in the
// file's order, and which of them count in the summary (a new or
// re-scored one; the others are rewritten as stored). The counts are what
// the file adds to the summary, filled by write.
type outFile struct {
	name, path             string
	rows                   []int
	count                  func(i int) bool
	n, changed             int64
	changedFrom, changedTo []int64
}

// dirFile is an output shard of a directory lake's incremental run: the
// input file it holds, its rows of d in the shard's order, and its stored
// posteriors (nil for a new or changed file, whose rows are all new). An
// unchanged file that the update did not touch is reportOnly: its shard
// stays, only its report is written again for the summary.
type dirFile struct {
	input, name string
	rows        []int
	stored      *resultio.Posteriors
	reportOnly  bool
}

// write writes f's rows to f.path as Parquet (an Iceberg data file) and
// counts what it adds to the summary.
func (f *outFile) write(ctx context.Context, fs blobio.FS, d *incData, u *update, cal resultio.Calibration, plan *job.Job, meta map[string]string) error {
	c := cleanedOf(d, f.rows, u, cal)
	for j, i := range f.rows {
		if !f.count(i) {
			continue
		}
		f.n++
		if c.Changed[j] {
			f.changed++
			f.changedFrom[schemas.GivenLabel(d.labelsOf(i))]++
			f.changedTo[c.CleanLabel[j]]++
		}
	}
	return shardio.WriteShard(ctx, fs, f.path, shardio.Parquet, []*schemas.Cleaned{c}, meta, plan.LabelKind, plan.ClassNames, plan.IDKind, nil)
}

// addTo adds f's counts to sum.
func (f *outFile) addTo(sum *resultio.Summary) {
	sum.Rows += f.n
	sum.Changed += f.changed
	for c := range f.changedFrom {
		sum.ChangedFrom[c] += f.changedFrom[c]
		sum.ChangedTo[c] += f.changedTo[c]
	}
}

// cleanedOf makes the output rows of rows (in that order) from their final
// states (u). The packed states are sized first: grown by appending, their
// copies were most of the time spent here on a 1M-row output file.
func cleanedOf(d *incData, rows []int, u *update, cal resultio.Calibration) *schemas.Cleaned {
	c := &schemas.Cleaned{IDKind: d.idKind, Multi: d.multi, LabelOff: make([]int32, 1, len(rows)+1)}
	var classes, cats, labels int
	for _, i := range rows {
		n, r := u.packedLen(i)
		classes, cats, labels = classes+n, cats+r, labels+int(d.off[i+1]-d.off[i])
	}
	c.IDs = make([]int64, 0, len(rows))
	if d.strIDs != nil {
		c.StrIDs = make([]string, 0, len(rows))
	}
	c.Labels = make([]int32, 0, labels)
	var ss mixture.States
	ss.ItemOff = make([]int32, 1, len(rows)+1)
	ss.Class, ss.Pi, ss.Rem = make([]int32, 0, classes), make([]float32, 0, classes), make([]float32, 0, classes)
	ss.RowOff = make([]int32, 1, classes+1)
	ss.Cat, ss.P = make([]int32, 0, cats), make([]float32, 0, cats)
	var buf []float32
	for _, i := range rows {
		c.IDs = append(c.IDs, d.keys[i])
		if d.strIDs != nil {
			c.StrIDs = append(c.StrIDs, d.strIDs[i])
		}
		c.Labels = append(c.Labels, d.labelsOf(i)...)
		c.LabelOff = append(c.LabelOff, int32(len(c.Labels)))
		buf = u.appendState(&ss, i, buf)
	}
	cal.Fill(c, &ss)
	return c
}

// storedTrans is a shard report's Trans from its stored posteriors p (rows
// rs of d, in p's order).
func storedTrans(p *resultio.Posteriors, rs []int, d *incData, c int) []float64 {
	if c > resultio.MaxDenseClasses {
		return nil
	}
	t := make([]float64, c*c)
	for j, i := range rs {
		given := schemas.GivenLabel(d.labelsOf(i))
		if given < 0 {
			continue
		}
		for e := p.Off[j]; e < p.Off[j+1]; e++ {
			t[int(p.Class[e])*c+int(given)] += float64(p.Prob[e])
		}
	}
	return t
}
