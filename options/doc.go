// Package options is relabel run's option model: Options and Defaults (every
// default written once), the flag table (name, group, default, doc, check
// and whether a run records and compares the value, in one literal entry per
// flag), and the resolution of the data-dependent defaults. It imports no
// Beam and no Iceberg: the quality harness, the CLI and the pipelines start
// here.
package options
