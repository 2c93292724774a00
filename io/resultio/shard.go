package resultio

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

// ReportSuffix names the report relabel run's writer leaves beside each
// output shard in its temporary directory: the shard's name + ReportSuffix.
const ReportSuffix = ".report.json"

// ShardOptions says how WriteShard writes an output shard (see
// shardio.WriteShard).
type ShardOptions struct {
	Format     shardio.Format
	Meta       map[string]string
	LabelKind  schemas.LabelKind
	ClassNames []string
	IDKind     schemas.IDKind
	// Mem allocates the Arrow buffers. Optional: nil is shardio.WriteShard's
	// default (a worker's DoFn has no allocator to pass).
	Mem memory.Allocator
}

// WriteShard writes batches as the output shard name in dir (local or any
// blobio path) and report, as JSON, beside it (name + ReportSuffix): what
// relabel run's writer stage leaves for the commit to rename into place.
// A nil report writes the shard alone (a caller that summarises its reports
// in memory).
func WriteShard(ctx context.Context, dir, name string, batches []*schemas.Cleaned, report any, o ShardOptions) error {
	fsys, err := blobio.For(dir)
	if err != nil {
		return fmt.Errorf("resultio: %w", err)
	}
	if err := shardio.WriteShard(ctx, fsys, blobio.Join(dir, name), o.Format, batches, o.Meta, o.LabelKind, o.ClassNames, o.IDKind, o.Mem); err != nil {
		return err
	}
	if report == nil {
		return nil
	}
	b, err := json.Marshal(report)
	if err != nil {
		return fmt.Errorf("resultio: report of %s: %w", name, err)
	}
	if err := blobio.WriteFile(ctx, fsys, blobio.Join(dir, name+ReportSuffix), b); err != nil {
		return fmt.Errorf("resultio: %w", err)
	}
	return nil
}

// MaxNameBytes is the longest file name relabel derives from an input's
// name, with every suffix it appends (ReportSuffix included): the limit of
// common file systems (ext4, XFS, APFS, NTFS in UTF-16 units).
const MaxNameBytes = 255

// nameHashLen is the number of hex digits of the input name's hash a shortened
// output name ends with: 64 bits, so distinct long names do not collide in
// practice.
const nameHashLen = 16

// OutputName is the output file name of an input shard: the same base name with
// the output format's extension. A name that, with ReportSuffix, would exceed
// MaxNameBytes (an input name of about 240 bytes or more) is shortened: its
// base cut at a character boundary and followed by "-" and a hash of the
// input's whole base name, so the name stays deterministic and distinct long
// names stay distinct. An input whose base name is AnnotatorsBase gets the
// same hash after it: readers of an output skip the annotators file by that
// name, so a shard named so would be lost to them (and, after an
// annotator-aware run, would overwrite the annotators file). Other names are
// unchanged.
func OutputName(input string, f shardio.Format) string {
	full := path.Base(strings.ReplaceAll(input, "\\", "/"))
	base := full
	if i := strings.LastIndex(base, "."); i > 0 {
		base = base[:i]
	}
	ext := f.Ext()
	sum := sha256.Sum256([]byte(full))
	tag := "-" + hex.EncodeToString(sum[:])[:nameHashLen]
	if base == AnnotatorsBase {
		return base + tag + ext
	}
	if len(base)+len(ext)+len(ReportSuffix) <= MaxNameBytes {
		return base + ext
	}
	keep := MaxNameBytes - len(ReportSuffix) - len(ext) - len(tag)
	for keep > 0 && !utf8.RuneStart(base[keep]) {
		keep--
	}
	return base[:keep] + tag + ext
}

// ShardReport is what writing one shard tells the summary.
type ShardReport struct {
	Input   string `json:"input"`
	Output  string `json:"output"`
	Rows    int64  `json:"rows"`
	Changed int64  `json:"changed"`
	// Unresolved counts rows left without a clean label (null): unlabelled
	// rows that no labelled row reached through neighbours within the rounds.
	Unresolved int64 `json:"unresolved,omitempty"`
	// ChangedTo[c] counts labels changed into class c; ChangedFrom[c] out of c.
	ChangedFrom []int64 `json:"changed_from"`
	ChangedTo   []int64 `json:"changed_to"`
	// Trans[c*C+c'] sums pi_i(c) over items given c': the unnormalised
	// estimate of P(given = c' | clean = c). Only for C <= MaxDenseClasses.
	Trans []float64 `json:"trans,omitempty"`
	// Temperature is the calibration temperature the shard's
	// probabilities were made with (the fitted one with --temperature
	// auto: the same in every shard).
	Temperature float64 `json:"temperature"`
}

// MaxDenseClasses bounds the class count for which the summary carries a dense
// transition matrix (C^2 numbers).
const MaxDenseClasses = 256

// Report is the report of output shard name (of input shard) holding
// batches: rows, changes per class and the transition sums. The pipeline's
// write stage (pipelines/stages) and the directory lake's incremental
// commit both make it.
func Report(shard, name string, batches []*schemas.Cleaned, c int) ShardReport {
	r := ShardReport{Input: shard, Output: name, ChangedFrom: make([]int64, c), ChangedTo: make([]int64, c)}
	if c <= MaxDenseClasses {
		r.Trans = make([]float64, c*c)
	}
	for _, b := range batches {
		for i := range b.IDs {
			r.Rows++
			if b.CleanLabel[i] < 0 {
				r.Unresolved++
			}
			given := schemas.GivenLabel(b.Labels[b.LabelOff[i]:b.LabelOff[i+1]])
			if b.Changed[i] {
				r.Changed++
				r.ChangedFrom[given]++
				r.ChangedTo[b.CleanLabel[i]]++
			}
			if r.Trans != nil && given >= 0 {
				for e := b.PostOff[i]; e < b.PostOff[i+1]; e++ {
					r.Trans[int(b.PostClass[e])*c+int(given)] += float64(b.PostProb[e])
				}
			}
		}
	}
	return r
}
