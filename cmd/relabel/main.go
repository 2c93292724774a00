// Command relabel finds and fixes wrong class labels in Parquet/Arrow datasets
// of embeddings. `relabel run` runs the relabelling pipeline (Apache Beam; the
// embedded Prism runner by default), `relabel noise` writes a noisy copy of a
// clean dataset, `relabel eval` scores cleaned output against the truth,
// `relabel report` writes report.html for an output, `relabel synth` writes a
// synthetic dataset for scale runs, `relabel worker` serves a Beam worker
// pool. One file per command (run.go, noise.go, eval.go, report.go, synth.go,
// worker.go); this one dispatches and holds what they
// share. Files are read and written through io/ (shardio, resultio,
// reportio): the only Arrow here is the allocator eval hands resultio.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"

	"github.com/relabel/relabel/internal/atexit"
	"github.com/relabel/relabel/internal/faults"
	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/shardio"
)

const usage = `relabel finds and fixes wrong class labels in datasets of embeddings.

Usage:
  relabel run   --input GLOB --output DIR [options]   relabel shards (see relabel run -h)
  relabel noise --input FILE --output FILE [options]  write a noisy copy of a clean dataset
  relabel eval  --output DIR --truth FILE [options]   score cleaned output against the truth
  relabel report DIR [--out FILE] [--top N]          write report.html for an output directory
  relabel synth --output DIR [options]               write a synthetic dataset (for scale runs)
  relabel worker [--listen HOST:PORT] [options]       serve a Beam worker pool (EXTERNAL environment)
  relabel version
  relabel help                                        this text (also -h, --help)

Each command's options: relabel COMMAND -h.
`

func main() {
	// Beam re-executes this binary as an SDK worker on non-LOOPBACK
	// environments with its own flags (--worker, --id, ...): let Beam take over.
	// A help flag is relabel's, not Beam's (whose flag set would list its
	// ~100 flags and none of the commands).
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], "--") && !isHelp(os.Args[1]) {
		flag.Parse()
		progress.Install(relayToRunner)
		beam.Init()
		os.Exit(0)
	}
	beam.Init()
	os.Exit(dispatch(signalContext(), os.Args[1:], os.Stdout, os.Stderr))
}

// relayToRunner is a worker's Sink: the SDK harness sends Beam's log to the
// runner, and the embedded one hands the line back to the launcher's display
// (internal/progress, relay.go), so that a run on workers in other processes
// shows its rounds as a run in one process does.
func relayToRunner(e progress.Event) {
	beamlog.Info(context.Background(), progress.RelayLine(e))
}

// signalContext is cancelled by SIGINT or SIGTERM (what a scheduler, a
// container runtime or systemd sends), with the signal as its cause: the run
// stops, removes its temporary and spill files, commits nothing and releases
// the output's lock. A second signal exits without waiting for the pipeline
// to stop, but still removes what the run created (internal/atexit: its
// temporary directory, lock, spill directory and the output directory it
// made; at most cleanupWait, so that a stuck remote store cannot hold it).
func signalContext() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		if !faults.Active("slow-stop") { // a test's pipeline that will not stop
			cancel(interrupted{s})
		}
		s = <-sigs
		atexit.RunAll(cleanupWait)
		os.Exit(exitCode(s))
	}()
	return ctx
}

// cleanupWait bounds a second signal's clean-up.
const cleanupWait = 10 * time.Second

// interrupted is the cause of a run stopped by a signal.
type interrupted struct{ sig os.Signal }

func (i interrupted) Error() string { return "interrupted by " + sigName(i.sig) }

func sigName(s os.Signal) string {
	if s == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGINT"
}

// exitCode is the shell's convention for death by a signal: 128 + its number.
func exitCode(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 130
}

// dispatch runs a subcommand and returns the exit status: 0 on success, 1 on
// a failed run (one clear line on stderr), 2 on bad usage (naming the flag),
// 128+n when stopped by signal n (130 SIGINT, 143 SIGTERM).
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "run":
		err = runCmd(ctx, args[1:], stdout, stderr)
	case "report":
		err = reportCmd(ctx, args[1:], stdout, stderr)
	case "noise":
		err = noiseCmd(ctx, args[1:], stdout, stderr)
	case "eval":
		err = evalCmd(ctx, args[1:], stdout, stderr)
	case "synth":
		err = synthCmd(ctx, args[1:], stdout, stderr)
	case "worker":
		err = workerCmd(ctx, args[1:], stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "relabel", version())
		return 0
	case "-h", "-help", "--h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "relabel: unknown command %q\n%s", args[0], usage)
		return 2
	}
	if err == nil {
		return 0
	}
	if err == flag.ErrHelp {
		return 0
	}
	var in interrupted
	if errors.As(context.Cause(ctx), &in) {
		fmt.Fprintf(stderr, "relabel %s: %v: stopped; nothing was committed, the output is as it was before this run\n", args[0], in)
		return exitCode(in.sig)
	}
	// Messages name files and quote data: progress.Safe escapes what a
	// terminal would act on (a file name's escape sequences, newlines).
	if ue, ok := err.(usageError); ok {
		// One problem a line (options report all of theirs, joined).
		lines := strings.Split(ue.error.Error(), "\n")
		for i, l := range lines {
			lines[i] = progress.Safe(l)
		}
		fmt.Fprintf(stderr, "relabel %s: %s\n", args[0], strings.Join(lines, "\n"))
		return 2
	}
	fmt.Fprintf(stderr, "relabel %s: %s\n", args[0], progress.Safe(oneLine(err)))
	return 1
}

// isHelp reports whether arg asks for relabel's usage.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--h", "--help", "help":
		return true
	}
	return false
}

type usageError struct{ error }

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

// notExists fails when path exists (the commands that write a file refuse
// to replace one unless told).
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
