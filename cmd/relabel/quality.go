package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/evaluate"
	"github.com/relabel/relabel/transforms/noise"
)

// This file holds the two benchmarking commands of issue 4:
//
//   relabel noise  reads a clean dataset and writes a noisy copy of it, in
//                  relabel's canonical input form, for relabel (or any
//                  cleaner) to clean; the true labels stay where they were
//                  (the clean input) and, with --truth-output, are also
//                  written to a separate file.
//   relabel eval   scores relabel's output directory against the truth.

const noiseUsage = `Usage: relabel noise --input CLEAN --output NOISY --kind sym|pair|idn|annotators [options]

Writes a noisy copy of a clean dataset: the same rows, ids and features, with
the label column replaced by noisy labels (--kind sym, pair, idn), or by a
"labels" column of --annotators simulated annotations (--kind annotators).
The true labels are not written into the noisy file: the clean input is the
truth (give it to relabel eval --truth), and --truth-output writes them to a
separate file as well. The output depends only on the input rows and --seed.

Options:
`

// noiseCmd is relabel noise.
func noiseCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("noise", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, noiseUsage); fs.PrintDefaults() }
	input := fs.String("input", "", "the clean dataset: a Parquet or Arrow IPC file, or a glob of shards, whose label column holds the true labels (required)")
	output := fs.String("output", "", "the noisy file to write (required)")
	format := fs.String("format", "", "output format: parquet or arrow (default: from the --output extension, .arrow/.ipc/.feather for arrow, else parquet)")
	kindName := fs.String("kind", "", "noise: sym (flip to a uniformly random other class), pair (flip c to c+1 mod C), idn (instance-dependent, Xia et al. 2020) or annotators (required)")
	rate := fs.Float64("rate", -1, "flip probability (the mean per-row rate for idn) in [0,1] (required for sym, pair, idn)")
	rateStd := fs.Float64("rate-std", noise.DefaultRateStd, "idn: standard deviation of the per-row flip rate")
	sharpness := fs.Float64("sharpness", noise.DefaultSharpness, "idn: scale of the flip-target logits")
	annotators := fs.Int("annotators", 5, "annotators: number of simulated annotators")
	accLo := fs.Float64("accuracy-lo", 0.55, "annotators: accuracy of the worst annotator (accuracies are spread evenly from lo to hi)")
	accHi := fs.Float64("accuracy-hi", 0.75, "annotators: accuracy of the best annotator")
	seed := fs.Uint64("seed", 1, "seed of the noise (with each row's id)")
	truthOut := fs.String("truth-output", "", "also write the true labels: FILE.i32 (raw little-endian int32, entry k = the label of id k; needs int64 ids 0..n-1) or FILE.parquet/.arrow (a copy of the clean rows)")
	overwrite := fs.Bool("overwrite", false, "replace existing output files")
	classes := fs.Int("classes", 0, "number of classes C of integer labels (default: one more than the largest label)")
	idCol := fs.String("id-column", schemas.ColID, "id column of the input")
	featCol := fs.String("features-column", schemas.ColFeatures, "features column of the input")
	labelCol := fs.String("label-column", schemas.ColLabel, "true-label column of the input")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *input == "" || *output == "" || *kindName == "" {
		return usageError{errors.New("--input, --output and --kind are required")}
	}
	kind, err := noise.ParseKind(*kindName)
	if err != nil {
		return usageError{err}
	}
	p := noise.Params{Kind: kind, Rate: *rate, RateStd: *rateStd, Sharpness: *sharpness, Seed: *seed}
	if kind == noise.Annotators {
		if *annotators < 1 {
			return usageError{fmt.Errorf("--annotators %d, want >= 1", *annotators)}
		}
		p.Accuracies = noise.Spread(*annotators, *accLo, *accHi)
	} else if *rate < 0 {
		return usageError{fmt.Errorf("--rate is required for --kind %s", kind)}
	}
	outFormat, err := formatFor(*output, *format)
	if err != nil {
		return usageError{err}
	}
	for _, path := range []string{*output, *truthOut} {
		if path == "" || *overwrite {
			continue
		}
		if err := notExists(ctx, path); err != nil {
			return err
		}
	}

	cols := schemas.Columns{ID: *idCol, Features: *featCol, Label: *labelCol}
	clean, err := readClean(ctx, *input, cols, *classes)
	if err != nil {
		return err
	}
	ds := noise.Dataset{D: clean.d, C: clean.c}
	for _, r := range clean.rows {
		ds.IDs = append(ds.IDs, r.IDs...)
		ds.Truth = append(ds.Truth, r.Labels...)
		if kind == noise.InstanceDependent {
			ds.Features = append(ds.Features, r.Features...)
		}
	}
	var out noise.Noisy
	if kind == noise.InstanceDependent {
		// Directly, so that --rate-std 0 (one flip rate for every row) is
		// not taken for "unset" as Generate's zero value is.
		out.Labels, err = noise.InstanceDependentLabels(ds, *rate, *rateStd, *sharpness, *seed)
	} else {
		out, err = noise.Generate(ds, p)
	}
	if err != nil {
		return err
	}
	noisy := noisyRows(clean.rows, out)
	fsys, err := blobio.For(*output)
	if err != nil {
		return err
	}
	if err := shardio.WriteInput(ctx, fsys, *output, outFormat, noisy, clean.labelKind, clean.names, nil); err != nil {
		return err
	}
	if *truthOut != "" {
		if err := writeTruth(ctx, *truthOut, clean, ds); err != nil {
			return err
		}
	}

	n := ds.Len()
	if kind == noise.Annotators {
		right := 0
		for i, y := range ds.Truth {
			for _, l := range out.Labels[out.Offsets[i]:out.Offsets[i+1]] {
				if l == y {
					right++
				}
			}
		}
		vote := evaluate.MajorityVote(out.Labels, out.Offsets, ds.C)
		fmt.Fprintf(stdout, "relabel noise: %d rows, %d annotators (accuracy %.2f..%.2f, seed %d): %.1f%% of annotations right, majority vote %.1f%% right; wrote %s\n",
			n, len(p.Accuracies), *accLo, *accHi, *seed, 100*float64(right)/float64(len(out.Labels)), 100*agree(vote, ds.Truth), *output)
		return nil
	}
	fmt.Fprintf(stdout, "relabel noise: %d rows, %s noise at rate %g (seed %d): %.1f%% of labels wrong; wrote %s\n",
		n, kind, *rate, *seed, 100*(1-agree(out.Labels, ds.Truth)), *output)
	return nil
}

// parseFlags parses args into fs and rejects positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	return nil
}

// formatFor picks the output format: the flag, else the path's extension.
func formatFor(path, flagValue string) (shardio.Format, error) {
	if flagValue != "" {
		return shardio.ParseFormat(flagValue)
	}
	switch ext := strings.ToLower(path[strings.LastIndex(path, ".")+1:]); ext {
	case "arrow", "ipc", "feather":
		return shardio.ArrowFile, nil
	}
	return shardio.Parquet, nil
}

func notExists(ctx context.Context, path string) error {
	fsys, err := blobio.For(path)
	if err != nil {
		return err
	}
	ok, err := fsys.Exists(ctx, path)
	if err != nil {
		return err
	}
	if ok {
		return fmt.Errorf("relabel: %s exists (pass --overwrite to replace it)", path)
	}
	return nil
}

// cleanData is a clean dataset read whole: one true label per row.
type cleanData struct {
	rows      []*schemas.Rows
	d, c      int
	labelKind schemas.LabelKind
	idKind    schemas.IDKind
	names     []string // string labels' class set, else nil
}

// readClean reads every shard of pattern, which must have one label per row
// and no null label.
func readClean(ctx context.Context, pattern string, cols schemas.Columns, classes int) (*cleanData, error) {
	ro := shardio.ReadOptions{Columns: cols}
	shards, err := shardio.Scan(ctx, pattern, ro)
	if err != nil {
		return nil, err
	}
	in := shards[0].Input
	if in.Multi {
		return nil, fmt.Errorf("relabel: %s: column %q is a list of annotations; the clean input needs one true label per row", shards[0].Path, in.LabelName)
	}
	cd := &cleanData{d: shards[0].D, labelKind: in.LabelKind, idKind: in.IDKind}
	ro.D = cd.d
	switch {
	case in.LabelKind == schemas.LabelString:
		if cd.names, err = shardio.ScanClassNames(ctx, shards, ro); err != nil {
			return nil, err
		}
		cd.c, ro.ClassNames = len(cd.names), cd.names
	case classes > 0:
		cd.c = classes
	default:
		if cd.c, err = shardio.ScanNumClasses(ctx, shards, ro); err != nil {
			return nil, err
		}
	}
	if cd.names == nil {
		ro.Classes = cd.c
	}
	for _, s := range shards {
		for _, u := range s.Units {
			r, err := shardio.ReadUnit(ctx, u, ro)
			if err != nil {
				return nil, err
			}
			for i, l := range r.Labels {
				if l == schemas.Unlabelled {
					return nil, fmt.Errorf("relabel: %s row %d: null label; every row of the clean input needs its true label", r.Shard, r.Offset+int64(i))
				}
			}
			cd.rows = append(cd.rows, r)
		}
	}
	return cd, nil
}

// noisyRows copies rows with their labels replaced by out's, batch by batch,
// so that the noisy file keeps the clean file's row groups.
func noisyRows(rows []*schemas.Rows, out noise.Noisy) []*schemas.Rows {
	res := make([]*schemas.Rows, len(rows))
	start := 0
	for b, r := range rows {
		n := r.Len()
		nr := *r
		if out.Offsets == nil {
			nr.Labels = out.Labels[start : start+n]
		} else {
			lo, hi := out.Offsets[start], out.Offsets[start+n]
			nr.Labels = out.Labels[lo:hi]
			nr.LabelOff = make([]int32, n+1)
			for i := range nr.LabelOff {
				nr.LabelOff[i] = out.Offsets[start+i] - lo
			}
			nr.Multi = true
		}
		res[b] = &nr
		start += n
	}
	return res
}

// writeTruth writes the true labels to path: raw .i32 indexed by id, or a
// copy of the clean rows in Parquet or Arrow.
func writeTruth(ctx context.Context, path string, cd *cleanData, ds noise.Dataset) error {
	fsys, err := blobio.For(path)
	if err != nil {
		return err
	}
	if !strings.HasSuffix(strings.ToLower(path), ".i32") {
		f, err := formatFor(path, "")
		if err != nil {
			return err
		}
		return shardio.WriteInput(ctx, fsys, path, f, cd.rows, cd.labelKind, cd.names, nil)
	}
	n := ds.Len()
	if cd.idKind != schemas.IDInt64 {
		return fmt.Errorf("relabel: --truth-output %s: .i32 truth is indexed by id and needs int64 ids; write .parquet or .arrow", path)
	}
	t := make([]int32, n)
	set := make([]bool, n)
	for i, id := range ds.IDs {
		if id < 0 || id >= int64(n) || set[id] {
			return fmt.Errorf("relabel: --truth-output %s: .i32 truth needs the ids to be 0..%d, each once; id %d is not; write .parquet or .arrow", path, n-1, id)
		}
		t[id], set[id] = ds.Truth[i], true
	}
	b, err := binary.Append(nil, binary.LittleEndian, t)
	if err != nil {
		return err
	}
	w, err := fsys.Create(ctx, path)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// agree is the fraction of equal entries.
func agree(a, b []int32) float64 {
	same := 0
	for i := range a {
		if a[i] == b[i] {
			same++
		}
	}
	return float64(same) / float64(max(len(a), 1))
}

const evalUsage = `Usage: relabel eval --output DIR --truth FILE [--input GLOB] [--json]

Scores the output of relabel run against the true labels: accuracy of the
given and of the cleaned labels, detection of the wrong given labels by
"changed" (precision, recall, F1), ROC AUC of 1 - given_label_prob as a
detector of them, and the expected calibration error of clean_prob. With
--input (the features relabel ran on) it also scores the K-nearest-neighbour
majority vote of the given labels on z-scored features, the baseline a
cleaner has to beat. Rows are matched to the truth by id; rows without a
given label are left out.

The truth is FILE.i32 (raw little-endian int32, entry k = the label of id k,
as relabel noise --truth-output and the dev data's truth.i32 write it; for
string labels, indices into the sorted class names) or a
Parquet / Arrow file with the id column and a true_label (else label) column,
such as the clean input of relabel noise.

Options:
`

// evalCmd is relabel eval.
func evalCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, evalUsage); fs.PrintDefaults() }
	outDir := fs.String("output", "", "output directory of relabel run (required)")
	truthPath := fs.String("truth", "", "the true labels: FILE.i32 or a Parquet / Arrow file with id and true_label or label (required)")
	truthCol := fs.String("truth-column", "", "label column of a Parquet / Arrow truth file (default true_label if present, else label)")
	inputGlob := fs.String("input", "", "the input relabel ran on, for the features of the kNN-vote baseline (optional)")
	k := fs.Int("k", evaluateVoteK, "neighbours of the kNN-vote baseline")
	idCol := fs.String("id-column", schemas.ColID, "id column of the truth and input files")
	featCol := fs.String("features-column", schemas.ColFeatures, "features column of the input")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *outDir == "" || *truthPath == "" {
		return usageError{errors.New("--output and --truth are required")}
	}
	if *k < 1 {
		return usageError{fmt.Errorf("--k %d, want >= 1", *k)}
	}
	out, err := readEvalOutput(ctx, *outDir)
	if err != nil {
		return err
	}
	truth, err := readTruth(ctx, *truthPath, *truthCol, *idCol, out)
	if err != nil {
		return err
	}
	in, keep, err := out.inputs(truth, *truthPath)
	if err != nil {
		return err
	}
	if *inputGlob != "" {
		x, d, err := readFeatures(ctx, *inputGlob, schemas.Columns{ID: *idCol, Features: *featCol}, out, keep)
		if err != nil {
			return err
		}
		given := in.Given
		if given == nil {
			given = evaluate.MajorityVote(in.GivenMulti, in.GivenOffsets, in.C)
		}
		in.Baselines = append(in.Baselines, evaluate.Baseline{
			Name:   fmt.Sprintf("kNN vote (K=%d, z-scored)", *k),
			Labels: evaluate.KNNVote(x, len(keep), d, given, in.C, *k, true),
		})
	}
	rep, err := evaluate.Evaluate(in)
	if err != nil {
		return fmt.Errorf("relabel: %w", err)
	}
	skipped := len(out.keys) - len(keep)
	if *asJSON {
		b, err := json.MarshalIndent(struct {
			Output     string          `json:"output"`
			Truth      string          `json:"truth"`
			Input      string          `json:"input,omitempty"`
			Rows       int             `json:"rows"`
			Unlabelled int             `json:"unlabelled_skipped"`
			Report     evaluate.Report `json:"report"`
		}{*outDir, *truthPath, *inputGlob, len(out.keys), skipped, rep}, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	fmt.Fprintf(stdout, "relabel eval: %s (%d files) against %s: %d rows", *outDir, out.files, *truthPath, len(out.keys))
	if skipped > 0 {
		fmt.Fprintf(stdout, ", %d without a given label left out", skipped)
	}
	fmt.Fprintf(stdout, "\n%s", evaluate.Format(rep))
	return nil
}

// evaluateVoteK is the data README's K of the kNN-vote baseline.
const evaluateVoteK = 10

// idKey is a row id, int64 or string.
type idKey struct {
	n int64
	s string
}

func (k idKey) String() string {
	if k.s != "" {
		return strconv.Quote(k.s)
	}
	return strconv.FormatInt(k.n, 10)
}

// evalOutput is a relabel output directory read whole, rows in file order.
type evalOutput struct {
	files  int
	keys   []idKey
	strIDs bool
	// given labels: row i's are labels[off[i]:off[i+1]] (class indices).
	labels, off []int32
	multi       bool
	clean       []int32
	cleanProb   []float32
	givenProb   []float32 // NaN where null
	changed     []bool
	names       []string // class names of string labels, else nil
	c           int      // classes: the output's option, else 1 + the largest label
}

// readEvalOutput reads every output shard (*.arrow, *.parquet) of dir.
func readEvalOutput(ctx context.Context, dir string) (*evalOutput, error) {
	fsys, err := blobio.For(dir)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, ext := range []string{".arrow", ".parquet"} {
		m, err := fsys.Glob(ctx, blobio.Join(dir, "*"+ext))
		if err != nil {
			return nil, err
		}
		for _, p := range m {
			if blobio.Base(p) != resultio.AnnotatorsBase+ext { // not a shard
				paths = append(paths, p)
			}
		}
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("relabel: no output shards (*.arrow, *.parquet) in %s", dir)
	}
	o := &evalOutput{off: []int32{0}}
	mem := memory.DefaultAllocator
	for fi, path := range paths {
		tbl, err := readTable(ctx, path, mem)
		if err != nil {
			return nil, err
		}
		err = o.add(path, tbl, fi == 0)
		tbl.Release()
		if err != nil {
			return nil, err
		}
	}
	o.files = len(paths)
	if o.names != nil {
		o.c = len(o.names)
	}
	return o, nil
}

// add appends one output file's rows.
func (o *evalOutput) add(path string, tbl arrow.Table, first bool) error {
	sc := tbl.Schema()
	names, err := schemas.ClassNamesFromMetadata(sc.Metadata().ToMap())
	if err != nil {
		return fmt.Errorf("relabel: %s: %w", path, err)
	}
	if first {
		o.names = names
		_, o.multi = column(tbl, schemas.ColLabels)
		if v, ok := sc.Metadata().GetValue(schemas.MetaOptionPrefix + "classes"); ok {
			o.c, _ = strconv.Atoi(v)
		}
	} else if !equalStrings(names, o.names) {
		return fmt.Errorf("relabel: %s: other class names than the first output file", path)
	}
	classes := classIndex(o.names)
	need := func(name string) ([]arrow.Array, error) {
		a, ok := column(tbl, name)
		if !ok {
			return nil, fmt.Errorf("relabel: %s: no column %q: not an output of relabel run", path, name)
		}
		return a, nil
	}
	n := int(tbl.NumRows())
	ids, err := need(schemas.ColID)
	if err != nil {
		return err
	}
	base := len(o.keys)
	if o.keys, err = appendIDs(o.keys, ids, path); err != nil {
		return err
	}
	o.strIDs = o.strIDs || (n > 0 && o.keys[base].s != "")
	givenName := schemas.ColLabel
	if o.multi {
		givenName = schemas.ColLabels
	}
	given, err := need(givenName)
	if err != nil {
		return err
	}
	if o.labels, o.off, err = appendGiven(o.labels, o.off, given, classes, path); err != nil {
		return err
	}
	clean, err := need(schemas.ColCleanLabel)
	if err != nil {
		return err
	}
	if o.clean, err = appendLabels(o.clean, clean, classes, path, schemas.ColCleanLabel); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		dst  *[]float32
	}{{schemas.ColCleanProb, &o.cleanProb}, {schemas.ColGivenLabelProb, &o.givenProb}} {
		a, err := need(f.name)
		if err != nil {
			return err
		}
		if *f.dst, err = appendFloats(*f.dst, a, path, f.name); err != nil {
			return err
		}
	}
	ch, err := need(schemas.ColChanged)
	if err != nil {
		return err
	}
	for _, c := range ch {
		b, ok := c.(*array.Boolean)
		if !ok {
			return fmt.Errorf("relabel: %s: column %q is %s, want bool", path, schemas.ColChanged, c.DataType())
		}
		for i := 0; i < b.Len(); i++ {
			o.changed = append(o.changed, b.IsValid(i) && b.Value(i))
		}
	}
	return nil
}

// inputs builds the evaluation inputs of the rows with a given label, and
// returns which rows those are.
func (o *evalOutput) inputs(truth map[idKey]int32, truthPath string) (evaluate.Inputs, []int, error) {
	c := o.c
	grow := func(l int32) {
		if o.names == nil && int(l) >= c {
			c = int(l) + 1
		}
	}
	in := evaluate.Inputs{}
	var keep []int
	var single []int32
	offs := []int32{0}
	for i, key := range o.keys {
		labs := o.labels[o.off[i]:o.off[i+1]]
		if len(labs) == 0 {
			continue
		}
		t, ok := truth[key]
		if !ok {
			return in, nil, fmt.Errorf("relabel: id %s of the output has no true label in %s", key, truthPath)
		}
		keep = append(keep, i)
		in.Truth = append(in.Truth, t)
		grow(t)
		for _, l := range labs {
			grow(l)
		}
		if o.multi {
			in.GivenMulti = append(in.GivenMulti, labs...)
			offs = append(offs, int32(len(in.GivenMulti)))
		} else {
			single = append(single, labs[0])
		}
		in.Clean = append(in.Clean, o.clean[i])
		grow(o.clean[i])
		in.CleanProb = append(in.CleanProb, unitProb(o.cleanProb[i]))
		in.GivenProb = append(in.GivenProb, unitProb(o.givenProb[i]))
		in.Changed = append(in.Changed, o.changed[i])
	}
	if len(keep) == 0 {
		return in, nil, fmt.Errorf("relabel: no output row has a given label")
	}
	if o.multi {
		in.GivenOffsets = offs
	} else {
		in.Given = single
	}
	in.C = c
	return in, keep, nil
}

// unitProb absorbs the float32 rounding of a probability stored as 1 + ulp.
func unitProb(p float32) float32 {
	if p > 1 && p < 1+1e-5 {
		return 1
	}
	return p
}

// readTruth reads the true labels, by id.
func readTruth(ctx context.Context, path, col, idCol string, o *evalOutput) (map[idKey]int32, error) {
	out := map[idKey]int32{}
	if strings.HasSuffix(strings.ToLower(path), ".i32") {
		if o.strIDs {
			return nil, fmt.Errorf("relabel: --truth %s: .i32 truth is indexed by int64 id, the output has string ids", path)
		}
		fsys, err := blobio.For(path)
		if err != nil {
			return nil, err
		}
		f, err := fsys.Open(ctx, path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		b, err := io.ReadAll(blobio.Section(f))
		if err != nil {
			return nil, fmt.Errorf("relabel: reading %s: %w", path, err)
		}
		if len(b)%4 != 0 {
			return nil, fmt.Errorf("relabel: --truth %s: %d bytes, not a whole number of int32 labels", path, len(b))
		}
		for k := 0; k < len(b)/4; k++ {
			v := int32(binary.LittleEndian.Uint32(b[4*k:]))
			if v < 0 || (o.names != nil && int(v) >= len(o.names)) {
				return nil, fmt.Errorf("relabel: --truth %s: label of id %d is %d, outside the class set", path, k, v)
			}
			out[idKey{n: int64(k)}] = v
		}
		return out, nil
	}
	tbl, err := readTable(ctx, path, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	if col == "" {
		col = "true_label"
		if _, ok := column(tbl, col); !ok {
			col = schemas.ColLabel
		}
	}
	ids, ok := column(tbl, idCol)
	if !ok {
		return nil, fmt.Errorf("relabel: --truth %s: no id column %q", path, idCol)
	}
	labs, ok := column(tbl, col)
	if !ok {
		return nil, fmt.Errorf("relabel: --truth %s: no label column %q", path, col)
	}
	keys, err := appendIDs(nil, ids, path)
	if err != nil {
		return nil, err
	}
	vals, err := appendLabels(nil, labs, classIndex(o.names), path, col)
	if err != nil {
		return nil, err
	}
	for i, k := range keys {
		if vals[i] < 0 {
			continue
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("relabel: --truth %s row %d: id %s repeated", path, i, k)
		}
		out[k] = vals[i]
	}
	return out, nil
}

// readFeatures reads the input relabel ran on and returns the features of
// the output rows keep, in that order (row-major, len(keep) x d).
func readFeatures(ctx context.Context, pattern string, cols schemas.Columns, o *evalOutput, keep []int) ([]float32, int, error) {
	ro := shardio.ReadOptions{Columns: cols}
	shards, err := shardio.Scan(ctx, pattern, ro)
	if err != nil {
		return nil, 0, err
	}
	d := shards[0].D
	ro.D = d
	if o.names != nil {
		ro.ClassNames = o.names
	} else {
		ro.Classes = max(o.c, 1)
		if shards[0].Input.LabelKind != schemas.LabelString {
			// The input's labels are the output's given labels, but the
			// reader checks them against a class count: take the input's.
			c, err := shardio.ScanNumClasses(ctx, shards, ro)
			if err != nil {
				return nil, 0, err
			}
			ro.Classes = max(ro.Classes, c)
		}
	}
	at := make(map[idKey]int, len(keep))
	for j, i := range keep {
		at[o.keys[i]] = j
	}
	x := make([]float32, len(keep)*d)
	found := make([]bool, len(keep))
	for _, s := range shards {
		for _, u := range s.Units {
			r, err := shardio.ReadUnit(ctx, u, ro)
			if err != nil {
				return nil, 0, err
			}
			for i := range r.IDs {
				k := idKey{n: r.IDs[i]}
				if r.StrIDs != nil {
					k = idKey{s: r.StrIDs[i]}
				}
				j, ok := at[k]
				if !ok {
					continue
				}
				copy(x[j*d:(j+1)*d], r.Features[i*d:(i+1)*d])
				found[j] = true
			}
		}
	}
	for j, ok := range found {
		if !ok {
			return nil, 0, fmt.Errorf("relabel: --input %s: no row with id %s of the output", pattern, o.keys[keep[j]])
		}
	}
	return x, d, nil
}

// readTable reads a whole Parquet or Arrow IPC file.
func readTable(ctx context.Context, path string, mem memory.Allocator) (arrow.Table, error) {
	fsys, err := blobio.For(path)
	if err != nil {
		return nil, err
	}
	f, err := fsys.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, min(f.Size(), 6))
	if _, err := f.ReadAt(head, 0); err != nil && err != io.EOF {
		return nil, fmt.Errorf("relabel: reading %s: %w", path, err)
	}
	switch {
	case bytes.HasPrefix(head, []byte("PAR1")):
		pr, err := file.NewParquetReader(blobio.Section(f))
		if err != nil {
			return nil, fmt.Errorf("relabel: %s: corrupt or truncated Parquet: %w", path, err)
		}
		defer pr.Close()
		fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{}, mem)
		if err != nil {
			return nil, fmt.Errorf("relabel: %s: %w", path, err)
		}
		tbl, err := fr.ReadTable(ctx)
		if err != nil {
			return nil, fmt.Errorf("relabel: reading %s: %w", path, err)
		}
		return tbl, nil
	case bytes.HasPrefix(head, []byte("ARROW1")):
		r, err := ipc.NewFileReader(blobio.Section(f), ipc.WithAllocator(mem))
		if err != nil {
			return nil, fmt.Errorf("relabel: %s: corrupt or truncated Arrow IPC file: %w", path, err)
		}
		defer r.Close()
		recs := make([]arrow.RecordBatch, 0, r.NumRecords())
		defer func() {
			for _, rec := range recs {
				rec.Release()
			}
		}()
		for i := 0; i < r.NumRecords(); i++ {
			rec, err := r.RecordBatchAt(i)
			if err != nil {
				return nil, fmt.Errorf("relabel: reading %s: %w", path, err)
			}
			recs = append(recs, rec)
		}
		return array.NewTableFromRecords(r.Schema(), recs), nil
	}
	return nil, fmt.Errorf("relabel: %s: not a Parquet or Arrow IPC file", path)
}

// column returns the chunks of the one column named name.
func column(tbl arrow.Table, name string) ([]arrow.Array, bool) {
	idx := tbl.Schema().FieldIndices(name)
	if len(idx) != 1 {
		return nil, false
	}
	return tbl.Column(idx[0]).Data().Chunks(), true
}

func classIndex(names []string) map[string]int32 {
	if names == nil {
		return nil
	}
	m := make(map[string]int32, len(names))
	for i, n := range names {
		m[n] = int32(i)
	}
	return m
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func appendIDs(dst []idKey, chunks []arrow.Array, path string) ([]idKey, error) {
	for _, c := range chunks {
		for i := 0; i < c.Len(); i++ {
			if c.IsNull(i) {
				return nil, fmt.Errorf("relabel: %s: null id", path)
			}
			switch a := c.(type) {
			case *array.Int64:
				dst = append(dst, idKey{n: a.Value(i)})
			case array.StringLike:
				dst = append(dst, idKey{s: strings.Clone(a.Value(i))})
			default:
				return nil, fmt.Errorf("relabel: %s: ids of type %s, want int64 or string", path, c.DataType())
			}
		}
	}
	return dst, nil
}

// labelOf reads element i of a label array as a class index: integers as they
// are (classes nil: the output has integer labels), strings through classes
// (the output's class names); -1 for null.
func labelOf(c arrow.Array, i int, classes map[string]int32, path, col string) (int32, error) {
	if c.IsNull(i) {
		return -1, nil
	}
	var s string
	switch a := c.(type) {
	case *array.Int32, *array.Int64:
		if classes != nil {
			return 0, fmt.Errorf("relabel: %s: column %q holds integers but the output has string labels", path, col)
		}
		if a, ok := a.(*array.Int32); ok {
			return checkLabel(int64(a.Value(i)), path, col)
		}
		return checkLabel(a.(*array.Int64).Value(i), path, col)
	case array.StringLike:
		s = a.Value(i)
	case *array.Dictionary:
		d, ok := a.Dictionary().(array.StringLike)
		if !ok {
			return 0, fmt.Errorf("relabel: %s: column %q of type %s", path, col, c.DataType())
		}
		s = d.Value(a.GetValueIndex(i))
	default:
		return 0, fmt.Errorf("relabel: %s: column %q of type %s, want int32, int64 or string labels", path, col, c.DataType())
	}
	if classes == nil {
		return 0, fmt.Errorf("relabel: %s: column %q holds strings but the output has integer labels", path, col)
	}
	v, ok := classes[s]
	if !ok {
		return 0, fmt.Errorf("relabel: %s: column %q: label %q is not one of the output's classes", path, col, s)
	}
	return v, nil
}

func checkLabel(v int64, path, col string) (int32, error) {
	if v < 0 || v > math.MaxInt32 {
		return 0, fmt.Errorf("relabel: %s: column %q: label %d outside [0, 2^31)", path, col, v)
	}
	return int32(v), nil
}

func appendLabels(dst []int32, chunks []arrow.Array, classes map[string]int32, path, col string) ([]int32, error) {
	for _, c := range chunks {
		for i := 0; i < c.Len(); i++ {
			v, err := labelOf(c, i, classes, path, col)
			if err != nil {
				return nil, err
			}
			dst = append(dst, v)
		}
	}
	return dst, nil
}

// appendGiven appends the given labels of a label or labels column; nulls
// (an unlabelled row, a missing annotation) are left out.
func appendGiven(labels, off []int32, chunks []arrow.Array, classes map[string]int32, path string) ([]int32, []int32, error) {
	for _, c := range chunks {
		list, isList := c.(array.ListLike)
		for i := 0; i < c.Len(); i++ {
			if !isList {
				v, err := labelOf(c, i, classes, path, schemas.ColLabel)
				if err != nil {
					return nil, nil, err
				}
				if v >= 0 {
					labels = append(labels, v)
				}
			} else if list.IsValid(i) {
				lo, hi := list.ValueOffsets(i)
				for j := lo; j < hi; j++ {
					v, err := labelOf(list.ListValues(), int(j), classes, path, schemas.ColLabels)
					if err != nil {
						return nil, nil, err
					}
					if v >= 0 {
						labels = append(labels, v)
					}
				}
			}
			off = append(off, int32(len(labels)))
		}
	}
	return labels, off, nil
}

func appendFloats(dst []float32, chunks []arrow.Array, path, col string) ([]float32, error) {
	for _, c := range chunks {
		a, ok := c.(*array.Float32)
		if !ok {
			return nil, fmt.Errorf("relabel: %s: column %q is %s, want float32", path, col, c.DataType())
		}
		for i := 0; i < a.Len(); i++ {
			v := float32(math.NaN())
			if a.IsValid(i) {
				v = a.Value(i)
			}
			dst = append(dst, v)
		}
	}
	return dst, nil
}
