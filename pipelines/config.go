package pipelines

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/engine"
)

// Version is relabel's version, recorded in every output.
const Version = "0.1.0"

// Config is one relabelling job.
type Config struct {
	// Input is a glob of shards (Parquet or Arrow IPC; local or gs://). Required.
	Input string
	// Output is the directory the cleaned shards go to. Required.
	Output string
	// Format of the output files. Optional, default Arrow IPC file.
	Format shardio.Format
	// Overwrite allows replacing finished outputs. Optional, default false.
	Overwrite bool
	// Columns names the input columns. Optional.
	Columns schemas.Columns
	// Classes is C for integer labels (0: one more than the largest label).
	Classes int
	// ClassNames is the class set of string labels (nil: collected, sorted).
	ClassNames []string
	// Engine holds the method's options; Engine.Mixture.C is set from the data.
	Engine engine.Options
	// Device selects the kNN/LLC kernels: cpu, cuda or auto. Optional, default auto.
	Device string
	// Neighbours selects where neighbours are searched: exact (all items),
	// sample (a --candidates subset), ivf (inverted-file partitions, keyed
	// joins; pipelines/ivf.go) or auto (by row count). Optional, default auto.
	Neighbours string
	// Partitions and NProbe configure ivf mode (0: transforms/ivf's defaults).
	Partitions, NProbe int
	// WaveMiB bounds what one wave of ivf mode's search and rounds shuffles
	// when they are not spilled (stages.DefaultWaveBytes): 0 is the
	// default, for the embedded runner; negative means no waves, for
	// distributed runners.
	WaveMiB int
	// SpillDir is where ivf mode keeps its blocks and states between stages
	// (stages.Spill), in a directory of its own that Run removes: a local
	// directory, for the embedded runner, whose shuffle holds everything in
	// memory. Optional: empty means no spilling (distributed runners).
	SpillDir string
}

// Validate checks what can be checked before reading anything.
func (c *Config) Validate() error {
	var errs []error
	if c.Input == "" {
		errs = append(errs, errors.New("--input is required"))
	}
	if c.Output == "" {
		errs = append(errs, errors.New("--output is required"))
	}
	errs = append(errs, c.validateNeighbours()...)
	if c.Classes < 0 {
		errs = append(errs, fmt.Errorf("--classes %d, want >= 0", c.Classes))
	}
	if c.Format == 0 {
		c.Format = shardio.ArrowFile
	}
	if c.Format != shardio.ArrowFile && c.Format != shardio.Parquet {
		errs = append(errs, fmt.Errorf("output format %s: want arrow or parquet", c.Format))
	}
	return errors.Join(errs...)
}

// OptionMap spells every method option as its flag would, for the output
// metadata and summary.json.
func (c *Config) OptionMap() map[string]string {
	o := c.Engine
	m := o.Mixture
	return map[string]string{
		"k":                 strconv.Itoa(o.K),
		"metric":            o.Metric.String(),
		"standardise":       strconv.FormatBool(o.Standardise),
		"candidates":        strconv.Itoa(o.Candidates),
		"weights":           o.Weighting.String(),
		"llc-lambda":        fmtF(o.LLC.Lambda),
		"llc-sigma":         fmtF(o.LLC.Sigma),
		"rounds":            strconv.Itoa(o.Rounds),
		"classes":           strconv.Itoa(m.C),
		"c0":                strconv.Itoa(m.C0),
		"l":                 strconv.Itoa(m.L),
		"n":                 strconv.Itoa(m.N),
		"mu":                fmtF(m.Mu),
		"gamma":             fmtF(m.Gamma),
		"alpha":             fmtF(m.Alpha),
		"beta":              fmtF(m.Beta),
		"em-iters":          strconv.Itoa(m.EMIters),
		"em-variant":        m.Variant.String(),
		"smooth":            fmtF(m.Smooth),
		"anchor":            fmtF(m.Anchor),
		"annotation-weight": fmtF(m.AnnotationWeight),
		"max-row-terms":     strconv.Itoa(m.MaxRowEntries),
		"seed":              strconv.FormatUint(m.Seed, 10),
		"format":            c.Format.String(),
		"device":            c.Device,
		"neighbours":        c.Neighbours,
		"partitions":        strconv.Itoa(c.Partitions),
		"nprobe":            strconv.Itoa(c.NProbe),
	}
}

func fmtF(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
