package icebergio

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/relabel/relabel/schemas"
)

// Snapshot summary keys that record a run. Version, seed and options use the
// same keys as the output shards' schema metadata (schemas.Metadata), so one
// reader understands both.
const (
	SummaryInputTable      = "relabel.input-table"
	SummaryInputSnapshot   = "relabel.input-snapshot-id"
	SummaryFromSnapshot    = "relabel.from-input-snapshot-id"
	SummaryVersion         = schemas.MetaVersion
	SummarySeed            = schemas.MetaSeed
	SummaryOptionPrefix    = schemas.MetaOptionPrefix
	SummaryState           = "relabel.state-file"
	SummaryFit             = "relabel.fit-file"
	summaryIncrementalFlag = "relabel.incremental"
)

// Run is what one relabel run covered, recorded in its output snapshot's
// summary and read back by the next run.
type Run struct {
	// InputTable is the input table's dotted name. Required.
	InputTable string
	// InputSnapshotID is the input snapshot the run covered: the next
	// incremental run plans the files appended after it. Required.
	InputSnapshotID int64
	// Incremental is true for a run that relabelled only the rows appended
	// after FromSnapshotID (and the old rows their neighbourhoods reached).
	Incremental bool
	// FromSnapshotID is, for an incremental run, the input snapshot the
	// previous run had covered. Optional, 0 for a full run.
	FromSnapshotID int64
	// Version is relabel's version. Required.
	Version string
	// Seed is the run's seed.
	Seed uint64
	// Options holds every option by name, valued as its flag spells it.
	Options map[string]string
	// State is a file the run kept for the next incremental run (relabel's
	// ivf partitioning of the rows), as a path relabel's readers open.
	// Optional: snapshots written before relabel kept one have none.
	State string
	// Fit is a file holding what the run's rounds fitted (relabel's linear
	// head and pooled start), which the next incremental runs apply to the
	// rows they relabel, as a path relabel's readers open. Optional: a run
	// that fitted neither, or one written before relabel kept them, has
	// none.
	Fit string
}

func (r Run) validate() error {
	switch {
	case r.InputTable == "":
		return fmt.Errorf("Run.InputTable is required")
	case r.Version == "":
		return fmt.Errorf("Run.Version is required")
	case r.Incremental != (r.FromSnapshotID != 0):
		return fmt.Errorf("Run.FromSnapshotID (%d) must be set exactly when Run.Incremental (%t)", r.FromSnapshotID, r.Incremental)
	}
	return nil
}

// properties encodes the run as snapshot summary properties.
func (r Run) properties() iceberg.Properties {
	p := iceberg.Properties{
		SummaryInputTable:    r.InputTable,
		SummaryInputSnapshot: strconv.FormatInt(r.InputSnapshotID, 10),
		SummaryVersion:       r.Version,
		SummarySeed:          strconv.FormatUint(r.Seed, 10),
	}
	if r.Incremental {
		p[summaryIncrementalFlag] = "true"
		p[SummaryFromSnapshot] = strconv.FormatInt(r.FromSnapshotID, 10)
	}
	for k, v := range r.Options {
		p[SummaryOptionPrefix+k] = v
	}
	if r.State != "" {
		p[SummaryState] = r.State
	}
	if r.Fit != "" {
		p[SummaryFit] = r.Fit
	}
	return p
}

// runFromSummary decodes a run from a snapshot summary; ok is false when the
// snapshot was not committed by relabel (no input snapshot recorded).
func runFromSummary(snapID int64, p iceberg.Properties) (r Run, ok bool, err error) {
	s, ok := p[SummaryInputSnapshot]
	if !ok {
		return Run{}, false, nil
	}
	bad := func(key string, err error) (Run, bool, error) {
		return Run{}, false, fmt.Errorf("snapshot %d summary %q: %w", snapID, key, err)
	}
	if r.InputSnapshotID, err = strconv.ParseInt(s, 10, 64); err != nil {
		return bad(SummaryInputSnapshot, err)
	}
	if r.Seed, err = strconv.ParseUint(p[SummarySeed], 10, 64); err != nil {
		return bad(SummarySeed, err)
	}
	if p[summaryIncrementalFlag] == "true" {
		r.Incremental = true
		if r.FromSnapshotID, err = strconv.ParseInt(p[SummaryFromSnapshot], 10, 64); err != nil {
			return bad(SummaryFromSnapshot, err)
		}
	}
	r.InputTable = p[SummaryInputTable]
	r.Version = p[SummaryVersion]
	r.State = p[SummaryState]
	r.Fit = p[SummaryFit]
	r.Options = map[string]string{}
	for k, v := range maps.All(p) {
		if name, ok := strings.CutPrefix(k, SummaryOptionPrefix); ok {
			r.Options[name] = v
		}
	}
	return r, true, nil
}
