package reportio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"math"

	"github.com/relabel/relabel/io/blobio"
)

// Summary is the part of summary.json (pipelines.Summary) that the report
// shows. It is a copy of those fields rather than an import: pipelines
// imports Beam, which an io package does not, and a run may write its report
// from pipelines.
type Summary struct {
	Version     string             `json:"version"`
	Input       string             `json:"input"`
	Output      string             `json:"output"`
	Rows        int64              `json:"rows"`
	Changed     int64              `json:"changed"`
	Classes     int                `json:"classes"`
	ClassNames  []string           `json:"class_names,omitempty"`
	Neighbours  string             `json:"neighbours"`
	Device      string             `json:"device"`
	Options     map[string]string  `json:"options"`
	ChangedFrom []int64            `json:"changed_from"`
	ChangedTo   []int64            `json:"changed_to"`
	Transition  [][]float64        `json:"transition,omitempty"`
	Shards      []ShardSummary     `json:"shards"`
	Metrics     map[string]int64   `json:"metrics,omitempty"`
	Timings     map[string]float64 `json:"timings_seconds"`
	// Annotators is set by annotator-aware runs, which write the
	// annotators file beside the shards.
	Annotators *AnnotatorsSummary `json:"annotators,omitempty"`
}

// ShardSummary is one shard's entry of summary.json.
type ShardSummary struct {
	Input   string `json:"input"`
	Output  string `json:"output"`
	Rows    int64  `json:"rows"`
	Changed int64  `json:"changed"`
}

// ReadSummary reads and checks DIR/summary.json: its presence marks a
// complete output (the run writes it last).
func ReadSummary(ctx context.Context, dir string) (*Summary, error) {
	fs, err := blobio.For(dir)
	if err != nil {
		return nil, err
	}
	path := blobio.Join(dir, "summary.json")
	f, err := fs.Open(ctx, path)
	if err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return nil, fmt.Errorf("reportio: %s has no summary.json: not a finished relabel output", dir)
		}
		return nil, fmt.Errorf("reportio: reading %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(blobio.Section(f))
	if err != nil {
		return nil, fmt.Errorf("reportio: reading %s: %w", path, err)
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("reportio: %s: %w", path, err)
	}
	switch {
	case s.Classes < 1 || s.Classes > math.MaxInt32:
		return nil, fmt.Errorf("reportio: %s: classes %d, want in [1, %d]", path, s.Classes, math.MaxInt32)
	case s.ClassNames != nil && len(s.ClassNames) != s.Classes:
		return nil, fmt.Errorf("reportio: %s: %d class_names for %d classes", path, len(s.ClassNames), s.Classes)
	case len(s.Shards) == 0:
		return nil, fmt.Errorf("reportio: %s: no shards", path)
	case s.Transition != nil && len(s.Transition) != s.Classes:
		return nil, fmt.Errorf("reportio: %s: transition has %d rows for %d classes", path, len(s.Transition), s.Classes)
	}
	if a := s.Annotators; a != nil && (a.File == "" || a.File != blobio.Base(a.File) || a.File == "." || a.File == "..") {
		return nil, fmt.Errorf("reportio: %s: annotators file %q, want a file name beside the shards", path, a.File)
	}
	if a := s.Annotators; a != nil {
		if msg := a.check(); msg != "" {
			return nil, fmt.Errorf("reportio: %s: %s", path, msg)
		}
	}
	for _, sh := range s.Shards {
		// A shard is a file beside summary.json: a hand-edited summary
		// cannot point the report at other files (../../etc/passwd).
		if sh.Output == "" || sh.Output != blobio.Base(sh.Output) || sh.Output == "." || sh.Output == ".." {
			return nil, fmt.Errorf("reportio: %s: shard output %q, want a file name beside summary.json", path, sh.Output)
		}
	}
	for i, row := range s.Transition {
		if len(row) != s.Classes {
			return nil, fmt.Errorf("reportio: %s: transition row %d has %d entries for %d classes", path, i, len(row), s.Classes)
		}
	}
	return &s, nil
}
