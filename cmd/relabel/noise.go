package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/evaluate"
	"github.com/relabel/relabel/transforms/noise"
)

// relabel noise reads a clean dataset and writes a noisy copy of it, in
// relabel's canonical input form, for relabel (or any cleaner) to clean; the
// true labels stay where they were (the clean input) and, with
// --truth-output, are also written to a separate file. relabel eval
// (eval.go) scores a cleaned output against them.

const noiseUsage = `Usage: relabel noise --input CLEAN --output NOISY --kind sym|pair|idn|perm|multi|mixed|annotators [options]

Writes a noisy copy of a clean dataset: the same rows, ids and features, with
the label column replaced by noisy labels (--kind sym, pair, idn, perm, multi,
mixed), or by a "labels" column of --annotators simulated annotations (--kind
annotators).
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
	kindName := fs.String("kind", "", "noise: sym (flip to a uniformly random other class), pair (flip c to c+1 mod C), idn (instance-dependent, Xia et al. 2020), perm (flip c to perm(c), a derangement of the classes drawn from --seed), multi (flip c to one of --targets other classes drawn from --seed, rate/targets each), mixed (pair flips on half the classes, drawn from --seed, symmetric on the rest) or annotators (required)")
	rate := fs.Float64("rate", -1, "flip probability (the mean per-row rate for idn) in [0,1] (required for every kind but annotators)")
	targets := fs.Int("targets", noise.DefaultTargets, "multi: number of classes each class flips to, in [1, C-1]")
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
	p := noise.Params{Kind: kind, Rate: *rate, RateStd: *rateStd, Sharpness: *sharpness, Targets: *targets, Seed: *seed}
	if kind == noise.Multi && *targets < 1 {
		return usageError{fmt.Errorf("--targets %d, want >= 1", *targets)}
	}
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
	if err := checkWrites(ctx, "noise", *input, []namedPath{{"output", *output}, {"truth-output", *truthOut}}); err != nil {
		return err
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
	if kind == noise.Multi && *targets > clean.c-1 {
		return usageError{fmt.Errorf("--targets %d, want at most C-1 = %d for %d classes", *targets, clean.c-1, clean.c)}
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
	if cd.idKind != schemas.IDInt64 {
		return fmt.Errorf("relabel: --truth-output %s: .i32 truth is indexed by id and needs int64 ids; write .parquet or .arrow", path)
	}
	return resultio.WriteTruthI32(ctx, path, ds.IDs, ds.Truth)
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

// namedPath is a path a command writes and the flag that named it.
type namedPath struct{ flag, path string }

// checkWrites refuses, as bad flag values (exit 2), outputs of command cmd
// that would replace one of its inputs (the files inputPattern matches),
// however spelled: through symbolic or hard links, "..", a file:// prefix;
// outputs that name one file twice; and an existing output that is not a
// regular file (a link, FIFO, device or directory), which --overwrite
// never replaces. An empty path is no output.
func checkWrites(ctx context.Context, cmd, inputPattern string, outs []namedPath) error {
	var ins []string
	if fsys, err := blobio.For(inputPattern); err == nil {
		ins, _ = fsys.Glob(ctx, inputPattern) // a bad pattern fails when read, with its own message
	}
	for i, o := range outs {
		if o.path == "" {
			continue
		}
		for _, in := range ins {
			if blobio.SameFile(o.path, in) || blobio.Canonical(o.path) == blobio.Canonical(in) {
				return usageError{fmt.Errorf("--%s %s is the input %s: relabel %s never writes over its input; choose another file", o.flag, o.path, in, cmd)}
			}
		}
		for _, p := range outs[:i] {
			if p.path != "" && (blobio.SameFile(o.path, p.path) || blobio.Canonical(o.path) == blobio.Canonical(p.path)) {
				return usageError{fmt.Errorf("--%s %s and --%s %s are one file: give each its own", p.flag, p.path, o.flag, o.path)}
			}
		}
		if err := blobio.NotRegular(o.path); err != nil {
			return usageError{fmt.Errorf("--%s %w", o.flag, err)}
		}
	}
	return nil
}
