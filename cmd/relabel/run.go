package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"golang.org/x/term"

	"github.com/relabel/relabel/internal/atexit"
	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/io/icebergio/catalogname"
	"github.com/relabel/relabel/io/reportio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/lake"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/pipelines"
	"github.com/relabel/relabel/runners"
)

func version() string { return job.Version }

// isTerminal reports whether w is a terminal (the live progress line is drawn
// only there; a log gets plain lines).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// runFlags binds every option of `relabel run` to an options.Options: the
// flags themselves (names, docs, checks) are options.Flags.
type runFlags struct {
	fs   *flag.FlagSet
	opts options.Options
	// beam lists Beam's own flags (--runner, --endpoint, --project, ...),
	// accepted as they are and shown apart in -h.
	beam []*flag.Flag
	help io.Writer
}

func newRunFlags(stdout io.Writer) *runFlags {
	f := &runFlags{fs: flag.NewFlagSet("run", flag.ContinueOnError), opts: options.Defaults()}
	// The flag package's own messages are replaced by relabel's one line
	// (flagError); help goes to stdout, asked for.
	f.fs.SetOutput(io.Discard)
	f.opts.Bind(f.fs)
	// Beam's own flags live on flag.CommandLine, where Beam and
	// runners.FromFlags read them.
	flag.CommandLine.VisitAll(func(g *flag.Flag) {
		if f.fs.Lookup(g.Name) == nil {
			f.fs.Var(g.Value, g.Name, g.Usage)
			f.beam = append(f.beam, g)
		}
	})
	f.fs.Usage = func() {}
	f.help = stdout
	return f
}

// usage prints relabel's own flags by group, then Beam's runner flags apart.
func (f *runFlags) usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: relabel run --input GLOB --output DIR [--incremental] [options]\n")
	fmt.Fprintf(w, "       relabel run --catalog sqlite:///PATH/catalog.db --input-table NS.T --output-table NS.T [--incremental] [options]\n")
	for _, g := range options.Groups {
		fmt.Fprintf(w, "\n%s:\n", g)
		for _, fl := range options.Flags {
			if fl.Group != g {
				continue
			}
			name := "--" + fl.Name
			if typ := flagType(f.fs.Lookup(fl.Name)); typ != "" {
				name += " " + typ
			}
			def := fl.DefaultText()
			if def != "" && def != "false" {
				fmt.Fprintf(w, "  %-24s %s (default %s)\n", name, fl.Usage, def)
			} else {
				fmt.Fprintf(w, "  %-24s %s\n", name, fl.Usage)
			}
		}
	}
	fmt.Fprintf(w, "\nRunner flags (Apache Beam's; see runners/README.md): ")
	var names []string
	for _, g := range f.beam {
		names = append(names, "--"+g.Name)
	}
	fmt.Fprintf(w, "%s\n", strings.Join(names, " "))
}

// flagType names the kind of value a flag takes, for help ("" for booleans).
func flagType(fl *flag.Flag) string {
	if fl == nil {
		return ""
	}
	if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return ""
	}
	name, _ := flag.UnquoteUsage(fl)
	if name == "value" {
		return "X"
	}
	return name
}

func (f *runFlags) parse(args []string) error {
	if err := f.fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			f.usage(f.help)
			return err
		}
		return usageError{flagError(err)}
	}
	if f.fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q (flags come as --name value)", f.fs.Args())}
	}
	o := &f.opts
	if !flagSet(f.fs, "label-column") && flagSet(f.fs, "labels-column") {
		o.Columns.Label = ""
	}
	if err := o.Validate(); err != nil {
		return usageError{err}
	}
	if err := job.CheckBounds(o); err != nil {
		return usageError{err}
	}
	return nil
}

// flagError rewrites the flag package's parse errors in relabel's terms:
// "invalid value "x" for flag -k: want an integer" -> "--k x: want an integer".
func flagError(err error) error {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if q, after, ok := strings.Cut(rest, " for flag -"); ok {
			if name, why, ok := strings.Cut(after, ": "); ok {
				if v, uerr := strconv.Unquote(q); uerr == nil {
					q = v
				}
				return fmt.Errorf("--%s %s: %s", name, q, why)
			}
		}
	}
	if rest, ok := strings.CutPrefix(msg, "invalid boolean value "); ok {
		if q, after, ok := strings.Cut(rest, " for -"); ok {
			if name, why, ok := strings.Cut(after, ": "); ok {
				return fmt.Errorf("--%s=%s: %s", name, strings.Trim(q, `"`), why)
			}
		}
	}
	if rest, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return fmt.Errorf("--%s: no such flag (relabel run -h lists them)", rest)
	}
	if rest, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Errorf("--%s: needs a value", rest)
	}
	return err
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// runFor is what runs o: a table lake (--output-table), a directory lake
// (--incremental into an output directory), or a plain run.
// The lake receives the pipeline's execution as a value
// (pipelines.Executing), so that it depends on no Beam package.
func runFor(o options.Options) func(context.Context, job.Config, pipelines.Executor) (*resultio.Summary, error) {
	switch {
	case o.Lake.OutputTable != "":
		return func(ctx context.Context, c job.Config, exec pipelines.Executor) (*resultio.Summary, error) {
			return lake.RunTable(ctx, c, pipelines.Executing(exec))
		}
	case o.Lake.Incremental:
		return func(ctx context.Context, c job.Config, exec pipelines.Executor) (*resultio.Summary, error) {
			return lake.RunDir(ctx, c, pipelines.Executing(exec))
		}
	}
	return pipelines.Run
}

// workerPaths resolves the paths the workers open for where they run
// (runners.Options.WorkerPath): relative ones become absolute when the
// workers are other processes, before anything is planned or submitted, so
// the plan, the summary and the workers all name the same files.
func workerPaths(ro runners.Options, o *options.Options) error {
	for _, p := range []struct {
		flag string
		v    *string
	}{{"input", &o.Input}, {"output", &o.Output}, {"annotations", &o.Annotations}} {
		abs, err := ro.WorkerPath(*p.v)
		if err != nil {
			return &options.Error{Flag: p.flag, Err: err}
		}
		*p.v = abs
	}
	return nil
}

// errDryRun ends a dry run's pipelines.Run before it looks for output.
var errDryRun = errors.New("relabel: dry run")

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newRunFlags(stdout)
	if err := f.parse(args); err != nil {
		return err
	}
	o := f.opts
	// Credentials in clear are refused before anything is opened or sent.
	if err := catalogname.CheckCredentials(o.Lake.Catalog, os.Getenv); err != nil {
		return usageError{&options.Error{Flag: "catalog", Err: err}}
	}
	ro := runners.FromFlags()
	if ro.Runner == "direct" {
		ro.Runner = runners.Prism
	}
	if err := ro.Validate(); err != nil {
		return usageError{err}
	}
	if a := flag.Lookup("async"); a != nil {
		if err := runners.CheckAsync(a.Value.String()); err != nil {
			return usageError{err}
		}
	}
	if err := workerPaths(ro, &o); err != nil {
		return usageError{err}
	}
	spill, err := ro.Spill(o.SpillDir.V, o.SpillDir.Set)
	if err != nil {
		return usageError{err}
	}
	if err := checkUsable(&o, o.SpillDir.Set); err != nil {
		return err
	}
	if dir := o.SpillDir.Or(""); o.SpillDir.Set && dir != "" && dir != "none" && !strings.Contains(dir, "://") {
		if err := probeWritable(dir); err != nil {
			return usageError{fmt.Errorf("--spill-dir %s: relabel cannot write there: %v", dir, err)}
		}
	}
	if spill == "" {
		spill = "none"
	}
	o.SpillDir = options.Some(spill)
	if !o.WaveMiB.Set && !ro.Waves() {
		o.WaveMiB = options.Some(-1)
	}
	dryRun := ro.IsDryRun()
	// A dry run's product is the job request Beam logs: keep Beam's log.
	verbose := o.Verbose || dryRun
	disp := progress.NewDisplay(stderr, isTerminal(stderr) && !verbose, time.Now)
	var quiet *progress.Quiet
	prev := slog.Default()
	switch {
	case !verbose:
		// Beam and Prism log through slog's default logger: keep their
		// warnings and errors (condensed) above the live line, drop the rest,
		// and show the progress workers in other processes relay.
		quiet = progress.NewQuiet(func(line string) { disp.Printf("%s", line) })
		slog.SetDefault(slog.New(progress.Relayed(quiet, disp.Handle)))
		defer slog.SetDefault(prev)
	case beam.Initialized():
		// Beam's own handler (beam.Init installs it) with the relayed
		// progress taken out. Not over slog's built-in handler, which writes
		// through the log package that SetDefault routes back here.
		slog.SetDefault(slog.New(progress.Relayed(prev.Handler(), disp.Handle)))
		defer slog.SetDefault(prev)
	}
	defer progress.Install(disp.Handle)()
	disp.Start()
	defer disp.Stop()
	exec := func(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error) {
		res, err := runners.Run(ctx, p, ro)
		if err == nil && dryRun {
			return nil, errDryRun
		}
		return res, err
	}
	made := trackRun(&o)
	// A failed or stopped run leaves nothing it created, a run
	// stopped by a second signal too (signalContext).
	undo := atexit.Push(made.undo)
	sum, err := runFor(o)(ctx, job.NewConfig(o), exec)
	if err != nil {
		undo.Run()
	} else {
		undo.Drop()
	}
	if quiet != nil {
		if err == nil {
			quiet.Flush()
		} else if n := quiet.Dropped(); n > 0 {
			if !hasCause(err) {
				if c := quiet.Cause(causePrefixes...); c != "" {
					err = fmt.Errorf("%w: %s", err, c)
				}
			}
			disp.Printf("relabel: (%d lines of Beam's own log about this failure hidden: --verbose shows them)", n)
		}
	}
	disp.Stop()
	if errors.Is(err, errDryRun) {
		fmt.Fprintln(stdout, "relabel: dry run: the Dataflow job request is printed on stderr; nothing was submitted or written")
		return nil
	}
	var oe *options.Error
	if errors.As(err, &oe) {
		return usageError{oe}
	}
	if err != nil {
		return err
	}
	lk := sum.Lake
	if lk != nil && (lk.OutputTable != "" || lk.NothingNew) {
		printLake(stdout, sum)
		return nil
	}
	if l := lk; l != nil && l.Incremental {
		fmt.Fprintf(stdout, "relabel: incremental run: %d new and %d changed input files (%d rows), %d gone; %d old rows re-scored, %d output shards written, %d removed\n",
			l.NewFiles, l.ChangedFiles, l.NewRows, len(l.GoneFiles), l.Rescored, l.AddedFiles, l.RemovedFiles)
	}
	if l := lk; l != nil && l.Incremental {
		// An incremental run relabels the new and re-scored rows only; the
		// output's total is another number (a deletion-only run relabels
		// nothing, though the output holds all its rows).
		if n := l.NewRows + l.Rescored; n == 0 {
			fmt.Fprintf(stdout, "relabel: no row relabelled (the rows of %d gone input files removed); output in %s holds %d rows, %d labels changed (summary.json beside the shards)\n",
				len(l.GoneFiles), progress.Safe(sum.Output), sum.Rows, sum.Changed)
		} else {
			fmt.Fprintf(stdout, "relabel: %d rows relabelled (%d new, %d re-scored); output in %s holds %d rows, %d labels changed (summary.json beside the shards)\n",
				n, l.NewRows, l.Rescored, progress.Safe(sum.Output), sum.Rows, sum.Changed)
		}
	} else {
		fmt.Fprintf(stdout, "relabel: %d rows relabelled, %d labels changed (%.1f%%); output in %s (summary.json beside the shards)\n",
			sum.Rows, sum.Changed, 100*float64(sum.Changed)/float64(max(sum.Rows, 1)), progress.Safe(sum.Output))
	}
	// The text and HTML reports are derived from the committed output, after
	// the commit, in one pass over it: `relabel report DIR` writes the page
	// again at any time. A failure here leaves the output complete.
	rep, err := reportio.Build(ctx, sum.Output, reportio.Options{})
	if err != nil {
		fmt.Fprintf(stderr, "relabel run: the output is complete, but no report could be made: %s\n", progress.Safe(oneLine(err)))
		return nil
	}
	fmt.Fprintln(stdout)
	rep.Text(stdout, 5)
	if o.Report {
		path, err := rep.SaveTo(ctx, "", o.Overwrite)
		if err != nil {
			fmt.Fprintf(stderr, "relabel run: the output is complete, but report.html was not written: %s\n", progress.Safe(oneLine(err)))
			return nil
		}
		fmt.Fprintf(stdout, "\nrelabel: report in %s\n", progress.Safe(path))
	}
	return nil
}

// causePrefixes start relabel's own error messages, which name the file,
// row and column where they can.
var causePrefixes = []string{"shardio: ", "annotio: ", "reportio: ", "icebergio: ", "relabel: ", "stages: ", "ivfstages: ", "crowdstages: ", "blobio: ", "engine: ", "mixture: ", "schemas: ", "resultio: "}

// hasCause reports whether err carries one of relabel's own messages.
func hasCause(err error) bool {
	for _, p := range causePrefixes {
		if strings.Contains(err.Error(), p) {
			return true
		}
	}
	return false
}

// oneLine reduces an error to the line a user needs: Beam wraps DoFn errors in
// stack and stage context, but relabel's own messages start with a package
// prefix and name the file, row and column.
func oneLine(err error) string {
	msg := err.Error()
	best := -1
	for _, p := range causePrefixes {
		if i := strings.Index(msg, p); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	if best >= 0 {
		msg = msg[best:]
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return strings.TrimSpace(msg)
}

// printLake says what a table run covered and committed (the report is for
// output directories; the table's files are read by any Iceberg reader).
func printLake(w io.Writer, sum *resultio.Summary) {
	l := sum.Lake
	if l.NothingNew && l.OutputTable == "" {
		fmt.Fprintf(w, "relabel: no input file of %s is new, changed or gone since %s was written; nothing changed\n", sum.Input, sum.Output)
		return
	}
	if l.NothingNew {
		fmt.Fprintf(w, "relabel: nothing appended to %s since snapshot %d, which %s covers; nothing committed\n", l.InputTable, l.InputSnapshot, l.OutputTable)
		return
	}
	kind := "full run"
	if l.Incremental {
		kind = fmt.Sprintf("incremental run from input snapshot %d: %d new rows in %d new files, %d old rows re-scored", l.FromSnapshot, l.NewRows, l.NewFiles, l.Rescored)
	}
	fmt.Fprintf(w, "relabel: %s; %d rows relabelled, %d labels changed; committed snapshot %d of %s covering %s snapshot %d\n",
		kind, sum.Rows, sum.Changed, l.OutputSnapshot, l.OutputTable, l.InputTable, l.InputSnapshot)
}

// probeWritable checks that files can be made in dir by making and removing
// an empty directory there: the spill files of a run come much later, and a
// directory relabel cannot write is a bad flag value, found up front.
func probeWritable(dir string) error {
	d, err := os.MkdirTemp(dir, ".relabel-probe-")
	if err != nil {
		return err
	}
	return os.Remove(d)
}
