package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"

	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/reportio"
)

const reportUsage = `Usage: relabel report DIR [--out FILE|- [--overwrite]] [--top N]

Writes report.html for the output directory DIR of relabel run: one
self-contained page (no network; open it from a bucket or an email) with the
run, a per-class table, the estimated transition matrix as a heatmap, the
most confused class pairs, a histogram of given_label_prob and the N
likeliest wrong labels. It reads the output once, so it is quick at any size.

Options:
`

// reportCmd is relabel report.
func reportCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, reportUsage); fs.PrintDefaults() }
	out := fs.String("out", "", "the page to write (default DIR/report.html; - for standard output)")
	top := fs.Int("top", reportio.DefaultTop, "how many of the likeliest wrong labels to list")
	pairs := fs.Int("pairs", reportio.DefaultPairs, "how many confused class pairs to list")
	overwrite := fs.Bool("overwrite", false, "replace an existing --out file (without it, only an earlier relabel report at DIR/report.html is replaced)")
	annRows := fs.Int("annotators-rows", reportio.DefaultAnnotators, "annotator-aware runs: how many unflagged annotators the annotators table lists (spammers and adversaries always are); 0: none")
	// DIR may come before or after the flags.
	var dir string
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		dir, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return usageError{err}
	}
	rest := fs.Args()
	if dir == "" && len(rest) > 0 {
		dir, rest = rest[0], rest[1:]
	}
	switch {
	case dir == "":
		return usageError{errors.New("the output directory DIR is required")}
	case len(rest) > 0:
		return usageError{fmt.Errorf("unexpected arguments %q", rest)}
	case *top < 0:
		return usageError{fmt.Errorf("--top %d, want >= 0", *top)}
	case *pairs < 1:
		return usageError{fmt.Errorf("--pairs %d, want >= 1", *pairs)}
	}
	toStdout := *out == "-" || stdoutAliases[*out]
	if *out != "" && !toStdout {
		// A bad --out is a bad flag value: exit 2 before the output is read.
		lst, lerr := os.Lstat(*out)
		st, err := os.Stat(*out)
		switch {
		case err == nil && st.IsDir():
			return usageError{fmt.Errorf("--out %s is a directory: give the page's file name, such as %s", *out, filepath.Join(*out, reportio.FileName))}
		case lerr == nil && lst.Mode()&(iofs.ModeNamedPipe|iofs.ModeCharDevice) != 0:
			// A FIFO or a terminal: written into, never replaced.
		case lerr == nil && !lst.Mode().IsRegular():
			return usageError{fmt.Errorf("--out %s is %s: relabel report replaces only regular files (give the file a link points to, or --out - for standard output)", *out, blobio.FileKind(lst.Mode()))}
		case err == nil && !*overwrite:
			// Like run's and noise's existing outputs: exit 1.
			return fmt.Errorf("relabel: --out %s exists: relabel report replaces no file it did not write (pass --overwrite to replace it)", *out)
		}
	}
	top0 := *top
	if top0 == 0 {
		top0 = -1 // reportio's zero means its default; --top 0 means none
	}
	opts := reportio.Options{Out: *out, Top: top0, Pairs: *pairs, Annotators: cmp.Or(*annRows, -1), Overwrite: *overwrite}
	if toStdout {
		// The page is the command's output: nothing else goes to stdout.
		opts.Out = ""
		r, err := reportio.Build(ctx, dir, opts)
		if err != nil {
			return err
		}
		return r.Render(stdout)
	}
	path, err := reportio.Write(ctx, dir, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "relabel report: wrote %s\n", progress.Safe(path))
	return nil
}

// stdoutAliases are the paths of a process's own standard output: --out
// naming one writes the page to stdout, as --out - does, whatever stdout is
// (a terminal, a pipe, a file the shell opened), rather than replacing or
// refusing the link.
var stdoutAliases = map[string]bool{"/dev/stdout": true, "/dev/fd/1": true, "/proc/self/fd/1": true}
