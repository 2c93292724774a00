package job

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/relabel/relabel/internal/atexit"
	"github.com/relabel/relabel/internal/faults"
	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/keptio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/options"
)

// Execute runs a job's whole pipeline, writing its output files and their
// reports into d.Tmp, and returns the run's summary (without timings) and
// how long the pipeline ran. Package pipelines makes one for the runner the
// command chose (pipelines.Executing); the plain run and the lake receive
// it as a value, so that the lake, which runs a full pipeline only at times,
// depends on no Beam package.
type Execute func(ctx context.Context, j *Job, d Dirs) (*resultio.Summary, time.Duration, error)

// Dirs are the directories one execution of a job uses besides its output.
type Dirs struct {
	// Tmp is where the run writes its output files and their reports.
	// Required.
	Tmp string
	// Token names the run (its spill directory's owner). Optional.
	Token string
	// KeepIVF, when set, is a directory where the pipeline's ivf stages
	// keep the partitioning they fitted (keptio.ReadIVFDir): a table run
	// with --incremental keeps it for the next runs. Optional.
	KeepIVF string
	// KeepFit, when set, is a directory where the pipeline's rounds keep
	// what they fitted besides the neighbours (keptio.ReadFitDir: the
	// linear head's last fit, the pooled start's transition, the
	// given-label model's fit): a lake run with --incremental keeps them
	// for the next runs, which give them to the rows they relabel.
	// Optional.
	KeepFit string
	// Spill is the run's own spill directory, which the execution makes
	// (under --spill-dir) where the job spills; callers leave it empty.
	Spill string
}

// Session is a run that holds its output directory's lock: what Open
// made, and what the run's steps after it share. Plain runs (Full) and the
// lake's directory runs (which either run Full or update the output
// themselves through Temp, Summarise and Publish) lock and commit every
// directory output through it (io/resultio's protocol).
type Session struct {
	Job *Job
	// FS is the output's store.
	FS blobio.FS
	// Start is when the run began (the summary's timings count from it).
	Start time.Time
	dir   *resultio.Dir
	hooks []*atexit.Hook
}

// Open reports the job, checks that the output is not an input's
// directory, makes the output directory and takes its lock. Close releases
// it (and removes the job's scratch files); a second signal's exit does
// too, through internal/atexit.
func Open(ctx context.Context, j *Job, start time.Time) (*Session, error) {
	s := &Session{Job: j, Start: start}
	if j.Scratch != "" {
		s.hooks = append(s.hooks, atexit.Push(func() { os.RemoveAll(j.Scratch) }))
	}
	cfg := &j.opts
	for _, sk := range j.Skipped {
		progress.Notef("%s", sk)
	}
	progress.Report(progress.Event{Kind: progress.Planned, Rows: j.Rows, Shards: len(j.Shards), Rounds: cfg.Rounds})
	if err := resultio.CheckNotInput(cfg.Output, j.InputPaths()); err != nil {
		s.Close()
		return nil, &options.Error{Flag: "output", Err: err}
	}
	d, err := resultio.OpenDir(ctx, cfg.Output, resultio.NewToken())
	if err != nil {
		s.Close()
		return nil, err
	}
	s.dir, s.FS = d, d.FS
	// Clean-ups are atexit hooks: a second signal exits without waiting for
	// this run to return, and still runs them.
	s.hooks = append(s.hooks, atexit.Push(d.Close))
	faults.Point("locked")
	return s, nil
}

// Close releases the lock and removes the job's scratch files.
func (s *Session) Close() {
	for i := len(s.hooks) - 1; i >= 0; i-- {
		s.hooks[i].Run()
	}
}

// FullRun is what a lake adds to a full run through a Session.
type FullRun struct {
	// Finish, when not nil, adds to the summary before it is written (the
	// lake's manifest).
	Finish func(*resultio.Summary)
	// Keep, when not nil, keeps the rounds' fits for the incremental runs
	// after this one: the pipeline keeps them in a directory of the run's
	// temporary directory, and Keep, given that directory and the
	// temporary directory, writes what the output keeps of them there and
	// returns the names to commit with the shards.
	Keep func(ctx context.Context, kept, tmp string) ([]string, error)
	// Overwrite replaces the output's files as --overwrite does (a lake
	// that relabels every row again replaces its own output).
	Overwrite bool
	// KeepIVF, when not nil, keeps an ivf run's partitioning (the one its
	// stages fitted and probed every row in) as keptio.DirIVFFileName,
	// committed with the shards, and is told that name.
	KeepIVF func(name string)
}

// Full runs the job's pipeline (exec) into a temporary directory of the
// output and commits it: the rest of a plain run after Open.
func (s *Session) Full(ctx context.Context, exec Execute, fr FullRun) (*resultio.Summary, error) {
	j := s.Job
	cfg := &j.opts
	files := j.OutputNames()
	guarded := append(append([]string(nil), files...), resultio.SummaryName)
	if cfg.Report {
		guarded = append(guarded, resultio.ReportName)
	}
	if err := s.dir.CheckFree(ctx, guarded, cfg.Overwrite || fr.Overwrite); err != nil {
		return nil, err
	}
	tmp, rmTmp, err := s.Temp(ctx)
	if err != nil {
		return nil, err
	}
	defer rmTmp.Run()
	d := Dirs{Tmp: tmp, Token: s.dir.Token()}
	if fr.Keep != nil {
		d.KeepFit = keptFitDir(tmp)
		if err := s.FS.MkdirAll(ctx, d.KeepFit); err != nil {
			return nil, fmt.Errorf("relabel: creating %s: %w", d.KeepFit, err)
		}
	}
	if fr.KeepIVF != nil && j.Mode == ModeIVF {
		d.KeepIVF = keptIVFDir(tmp)
		if err := s.FS.MkdirAll(ctx, d.KeepIVF); err != nil {
			return nil, fmt.Errorf("relabel: creating %s: %w", d.KeepIVF, err)
		}
	}
	tPlan := time.Since(s.Start)
	sum, tRun, err := exec(ctx, j, d)
	if err != nil {
		return nil, err
	}
	if fr.Finish != nil {
		fr.Finish(sum)
	}
	var kept []string
	if fr.Keep != nil {
		if kept, err = fr.Keep(ctx, d.KeepFit, tmp); err != nil {
			return nil, err
		}
		keptio.RemoveFitDir(ctx, d.KeepFit)
	}
	if d.KeepIVF != "" {
		if _, err := keptio.KeepIVFDir(ctx, s.FS, d.KeepIVF, tmp, keptio.DirIVFFileName); err != nil {
			return nil, err
		}
		keptio.RemoveIVFDir(ctx, d.KeepIVF)
		kept = append(kept, keptio.DirIVFFileName)
		fr.KeepIVF(keptio.DirIVFFileName)
	}
	sum.Timings = map[string]float64{
		"plan":     tPlan.Seconds(),
		"pipeline": tRun.Seconds(),
		"total":    time.Since(s.Start).Seconds(),
	}
	if err := s.Publish(ctx, tmp, append(j.Written(ctx, s.FS, tmp, files), kept...), sum); err != nil {
		return nil, err
	}
	rmTmp.Run()
	return sum, nil
}

// keptFitDir is where a full run's rounds keep their fits in its
// temporary directory tmp.
func keptFitDir(tmp string) string { return blobio.Join(tmp, "fit-kept") }

// keptIVFDir is where a full run's ivf stages keep their partitioning in
// its temporary directory tmp.
func keptIVFDir(tmp string) string { return blobio.Join(tmp, "ivf-kept") }

// Temp makes the run's temporary directory inside the output. The hook
// removes it and what the run wrote there: on every way out, a second
// signal's included (internal/atexit); after the commit it is empty.
func (s *Session) Temp(ctx context.Context) (string, *atexit.Hook, error) {
	tmp, err := s.dir.Temp(ctx)
	if err != nil {
		return "", nil, err
	}
	return tmp, atexit.Push(func() { RemoveTemp(context.WithoutCancel(ctx), s.FS, tmp, s.Job) }), nil
}

// RemoveTemp deletes what a run of j may have written into tmp (its output
// files and reports, its summary, journal and kept fits) and the
// directory: a plain run's temporary directory, or a table run's directory
// until its commit.
func RemoveTemp(ctx context.Context, fs blobio.FS, tmp string, j *Job) {
	keptio.RemoveFitDir(ctx, keptFitDir(tmp))
	keptio.RemoveIVFDir(ctx, keptIVFDir(tmp))
	resultio.RemoveTemp(ctx, fs, tmp, append(j.OutputNames(), keptio.FitFileName, keptio.DirIVFFileName))
}

// Summarise sums the shard reports written into tmp (Job.Summarise), for a
// lake run that wrote them itself.
func (s *Session) Summarise(ctx context.Context, tmp string) (*resultio.Summary, error) {
	return s.Job.Summarise(ctx, s.FS, tmp)
}

// SummariseReports is Summarise with the shard reports given, by output
// name, instead of read from tmp: a run that made them in this process
// (the directory lake's incremental commit) need not write and read back a
// file for each.
func (s *Session) SummariseReports(ctx context.Context, tmp string, reports map[string]resultio.ShardReport) (*resultio.Summary, error) {
	return s.Job.summarise(ctx, s.FS, tmp, reports)
}

// Publish writes sum as tmp's summary.json and commits files (names in tmp)
// and it into the output (io/resultio's protocol).
func (s *Session) Publish(ctx context.Context, tmp string, files []string, sum *resultio.Summary) error {
	return s.dir.Publish(ctx, tmp, files, sum)
}

// Resume finishes a commit that a killed run left half done, then removes
// earlier runs' temporary directories (resultio.Dir.Resume). Reports
// whether it finished one.
func (s *Session) Resume(ctx context.Context) (bool, error) { return s.dir.Resume(ctx) }

// Previous is the output's finished summary.json; found is false when
// there is none.
func (s *Session) Previous(ctx context.Context) (*resultio.Summary, bool, error) {
	return s.dir.Previous(ctx)
}

// Summarise gathers the shard reports a run of j wrote into tmp (and the
// annotators file's) into the run's summary, without the pipeline's
// counters or timings.
func (p *Job) Summarise(ctx context.Context, fs blobio.FS, tmp string) (*resultio.Summary, error) {
	return p.summarise(ctx, fs, tmp, nil)
}

// summarise is Summarise taking the reports in reports from there and the
// others from tmp.
func (p *Job) summarise(ctx context.Context, fs blobio.FS, tmp string, reports map[string]resultio.ShardReport) (*resultio.Summary, error) {
	cfg := p.opts
	input := cfg.Input
	if input == "" {
		input = cfg.Annotations
	}
	sum := &resultio.Summary{
		Version: Version, Input: input, Output: cfg.Output, Rows: 0, Classes: p.C,
		ClassNames: p.ClassNames, Neighbours: p.Mode, Device: p.Device, Options: p.Recorded(),
		ChangedFrom: make([]int64, p.C), ChangedTo: make([]int64, p.C),
	}
	for _, sk := range p.Skipped {
		sum.Skipped = append(sum.Skipped, sk.String())
	}
	var trans []float64
	names, inputs := p.ShardFiles()
	for k, name := range names {
		rep, given := reports[name]
		var err error
		if !given {
			err = readJSON(ctx, fs, blobio.Join(tmp, name+resultio.ReportSuffix), &rep)
		}
		if err != nil {
			if p.Crowd != nil && p.Crowd.LabelOnly {
				continue // an empty bucket writes no shard
			}
			return nil, fmt.Errorf("relabel: shard %s produced no output: %w", inputs[k], err)
		}
		sum.Rows += rep.Rows
		sum.Changed += rep.Changed
		sum.Unresolved += rep.Unresolved
		for c := range rep.ChangedFrom {
			sum.ChangedFrom[c] += rep.ChangedFrom[c]
			sum.ChangedTo[c] += rep.ChangedTo[c]
		}
		if rep.Trans != nil {
			if trans == nil {
				trans = make([]float64, len(rep.Trans))
			}
			for i, v := range rep.Trans {
				trans[i] += v
			}
		}
		rep.Trans = nil
		sum.Shards = append(sum.Shards, rep)
	}
	if len(sum.Shards) > 0 {
		// The temperature the output was calibrated with (fitted with
		// --temperature auto; the same in every shard): an incremental run
		// keeps it (the lake's plan).
		sum.Options[resultio.MetaCalibratedTemperature] = fmtF(sum.Shards[0].Temperature)
	}
	if trans != nil {
		c := p.C
		sum.Transition = make([][]float64, c)
		for a := 0; a < c; a++ {
			row := trans[a*c : (a+1)*c]
			var z float64
			for _, v := range row {
				z += v
			}
			sum.Transition[a] = make([]float64, c)
			for b, v := range row {
				if z > 0 {
					sum.Transition[a][b] = math.Round(v/z*1e6) / 1e6
				}
			}
		}
	}
	if p.Crowd != nil {
		name := resultio.AnnotatorsName(cfg.Format)
		sum.Annotators = &resultio.AnnotatorsSummary{}
		if err := readJSON(ctx, fs, blobio.Join(tmp, name+resultio.ReportSuffix), sum.Annotators); err != nil {
			return nil, fmt.Errorf("relabel: no annotators file: %w", err)
		}
	}
	return sum, nil
}

func readJSON(ctx context.Context, fs blobio.FS, path string, v any) error {
	b, err := blobio.ReadFile(ctx, fs, path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
