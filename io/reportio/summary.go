package reportio

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

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
		return nil, fmt.Errorf("reportio: %s: not a finished relabel output (%w)", dir, err)
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
	case s.Classes < 1:
		return nil, fmt.Errorf("reportio: %s: classes %d, want >= 1", path, s.Classes)
	case s.ClassNames != nil && len(s.ClassNames) != s.Classes:
		return nil, fmt.Errorf("reportio: %s: %d class_names for %d classes", path, len(s.ClassNames), s.Classes)
	case len(s.Shards) == 0:
		return nil, fmt.Errorf("reportio: %s: no shards", path)
	case s.Transition != nil && len(s.Transition) != s.Classes:
		return nil, fmt.Errorf("reportio: %s: transition has %d rows for %d classes", path, len(s.Transition), s.Classes)
	}
	for i, row := range s.Transition {
		if len(row) != s.Classes {
			return nil, fmt.Errorf("reportio: %s: transition row %d has %d entries for %d classes", path, i, len(row), s.Classes)
		}
	}
	return &s, nil
}
