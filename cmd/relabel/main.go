// Command relabel finds and fixes wrong class labels in Parquet/Arrow datasets
// of embeddings. `relabel run` runs the relabelling pipeline (Apache Beam; the
// embedded Prism runner by default), `relabel noise` writes a noisy copy of a
// clean dataset, `relabel eval` scores cleaned output against the truth.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

const usage = `relabel finds and fixes wrong class labels in datasets of embeddings.

Usage:
  relabel run   --input GLOB --output DIR [options]   relabel shards (see relabel run -h)
  relabel noise --input FILE --output FILE [options]  write a noisy copy of a clean dataset
  relabel eval  --output DIR --truth FILE [options]   score cleaned output against the truth
  relabel version
`

func main() {
	// Beam re-executes this binary as an SDK worker on non-LOOPBACK
	// environments with its own flags (--worker, --id, ...): let Beam take over.
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], "--") {
		flag.Parse()
		beam.Init()
		os.Exit(0)
	}
	beam.Init()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// dispatch runs a subcommand and returns the exit status: 0 on success, 1 on
// a failed run (one clear line on stderr), 2 on bad usage.
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "run":
		err = runCmd(ctx, args[1:], stdout, stderr)
	case "noise":
		err = noiseCmd(ctx, args[1:], stdout, stderr)
	case "eval":
		err = evalCmd(ctx, args[1:], stdout, stderr)
	case "synth":
		err = synthCmd(ctx, args[1:], stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "relabel", version())
		return 0
	case "-h", "--help", "help":
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
	if ue, ok := err.(usageError); ok {
		fmt.Fprintf(stderr, "relabel %s: %v\n", args[0], ue.error)
		return 2
	}
	fmt.Fprintf(stderr, "relabel %s: %s\n", args[0], oneLine(err))
	return 1
}

type usageError struct{ error }
