package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/reportio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/evaluate"
)

const evalUsage = `Usage: relabel eval --output DIR --truth FILE [--input GLOB] [--json]

Scores the output of relabel run against the true labels: accuracy of the
given and of the cleaned labels, detection of the wrong given labels by
"changed" (precision, recall, F1), ROC AUC of 1 - given_label_prob as a
detector of them, and the expected calibration error of clean_prob. With
--input (the features relabel ran on) it also scores the K-nearest-neighbour
majority vote of the given labels on z-scored features, the baseline a
cleaner has to beat. Rows are matched to the truth by id; rows without a
given label are left out. It also rewrites DIR/report.html (relabel report)
with the truth: accuracy against the baselines, a reliability diagram of
clean_prob and detection precision/recall by threshold (--report=false
leaves it as it is).

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
	page := fs.Bool("report", true, "rewrite DIR/report.html with the truth figures")
	overwrite := fs.Bool("overwrite", false, "with --report: replace DIR/report.html even when it is not a relabel report")
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
	if strings.HasSuffix(strings.ToLower(*truthPath), ".i32") && out.StrIDs != nil {
		return fmt.Errorf("relabel: --truth %s: .i32 truth is indexed by int64 id, the output has string ids", *truthPath)
	}
	t, err := resultio.ReadTruth(ctx, *truthPath, resultio.TruthOptions{IDColumn: *idCol, LabelColumn: *truthCol, ClassNames: out.ClassNames, Mem: memory.DefaultAllocator})
	if err != nil {
		return fmt.Errorf("relabel: --truth: %w", err)
	}
	truth, err := t.ByID()
	if err != nil {
		return fmt.Errorf("relabel: --truth: %w", err)
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
	var pagePath string
	if *page {
		if pagePath, err = truthReport(ctx, *outDir, *truthPath, truth, rep, *overwrite); err != nil {
			return err
		}
	}
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
	fmt.Fprintf(stdout, "relabel eval: %s (%d files) against %s: %d rows", *outDir, len(out.Paths), *truthPath, len(out.keys))
	if skipped > 0 {
		fmt.Fprintf(stdout, ", %d without a given label left out", skipped)
	}
	fmt.Fprintf(stdout, "\n%s", evaluate.Format(rep))
	if pagePath != "" {
		fmt.Fprintf(stdout, "relabel eval: report with the truth in %s\n", pagePath)
	}
	return nil
}

// truthReport rewrites dir's report.html (reportio, renamed into place) with
// the truth and the baselines' accuracies of rep, and returns its path.
func truthReport(ctx context.Context, dir, truthPath string, truth map[resultio.Key]int32, rep evaluate.Report, overwrite bool) (string, error) {
	var base []reportio.Baseline
	for _, b := range rep.Baselines {
		base = append(base, reportio.Baseline{Name: b.Name, Accuracy: float64(b.Accuracy)})
	}
	path, err := reportio.Write(ctx, dir, reportio.Options{
		Truth: func(id resultio.Key) (int32, bool) {
			c, ok := truth[id]
			return c, ok
		},
		TruthName: truthPath, Baselines: base, Overwrite: overwrite,
	})
	if err != nil {
		return "", fmt.Errorf("relabel: report.html: %w", err)
	}
	return path, nil
}

// evaluateVoteK is the data README's K of the kNN-vote baseline.
const evaluateVoteK = 10

// evalOutput is a relabel output directory read whole (resultio.Output),
// with each row's id as a key to match the truth and the input by.
type evalOutput struct {
	*resultio.Output
	keys []resultio.Key
	// c is the classes: the output's option, else 1 + the largest label.
	c int
}

// readEvalOutput reads every output shard (*.arrow, *.parquet) of dir.
func readEvalOutput(ctx context.Context, dir string) (*evalOutput, error) {
	out, err := resultio.ReadOutput(ctx, dir, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	o := &evalOutput{Output: out, keys: make([]resultio.Key, out.Len()), c: out.Classes}
	for i := range o.keys {
		if out.StrIDs != nil {
			o.keys[i] = resultio.Key{Str: out.StrIDs[i], IsStr: true}
		} else {
			o.keys[i] = resultio.Key{Int: out.IDs[i]}
		}
	}
	return o, nil
}

// inputs builds the evaluation inputs of the rows with a given label, and
// returns which rows those are.
func (o *evalOutput) inputs(truth map[resultio.Key]int32, truthPath string) (evaluate.Inputs, []int, error) {
	c := o.c
	grow := func(l int32) {
		if o.ClassNames == nil && int(l) >= c {
			c = int(l) + 1
		}
	}
	in := evaluate.Inputs{}
	var keep []int
	var single []int32
	offs := []int32{0}
	for i, key := range o.keys {
		labs := o.Given[o.GivenOff[i]:o.GivenOff[i+1]]
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
		if o.Multi {
			in.GivenMulti = append(in.GivenMulti, labs...)
			offs = append(offs, int32(len(in.GivenMulti)))
		} else {
			single = append(single, labs[0])
		}
		in.Clean = append(in.Clean, o.Clean[i])
		grow(o.Clean[i])
		in.CleanProb = append(in.CleanProb, unitProb(o.CleanProb[i]))
		in.GivenProb = append(in.GivenProb, unitProb(o.GivenProb[i]))
		in.Changed = append(in.Changed, o.Changed[i])
	}
	if len(keep) == 0 {
		return in, nil, fmt.Errorf("relabel: no output row has a given label")
	}
	if o.Multi {
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
	if o.ClassNames != nil {
		ro.ClassNames = o.ClassNames
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
	at := make(map[resultio.Key]int, len(keep))
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
				k := resultio.Key{Int: r.IDs[i]}
				if r.StrIDs != nil {
					k = resultio.Key{Str: r.StrIDs[i], IsStr: true}
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
