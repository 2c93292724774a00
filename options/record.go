package options

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// OptionsTable renders Flags as the manual's options table (Markdown), one table
// per group: docs/OPTIONS.md shows exactly this (TestOptionsDoc).
func OptionsTable() string {
	var b strings.Builder
	for _, g := range Groups {
		fmt.Fprintf(&b, "**%s**\n\n| flag | default | meaning |\n|---|---|---|\n", g)
		for _, f := range Flags {
			if f.Group != g {
				continue
			}
			def := f.DefaultText()
			if def == "" {
				def = "none"
			}
			fmt.Fprintf(&b, "| `--%s` | %s | %s |\n", f.Name, strings.ReplaceAll(def, "|", `\|`), strings.ReplaceAll(f.Usage, "|", `\|`))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// FlagValues spells o as relabel run's flags of the given groups (all when
// none): each flag's name and value, "" for a data-dependent option left
// unset. The quality harness records what it ran with it.
func (o *Options) FlagValues(groups ...string) map[string]string {
	m := map[string]string{}
	for _, f := range Flags {
		if len(groups) == 0 || slices.Contains(groups, f.Group) {
			m[f.Name] = f.bind(o).String()
		}
	}
	return m
}

// Record spells the options a run records (summary.json, the shards'
// metadata, an Iceberg snapshot's properties): every flag whose entry in
// Flags says Recorded or Compared, as its flag would, from o with the
// data-dependent defaults resolved (the caller fills them: the run's C, c0,
// n, em-iters, candidates and neighbour mode). The annotator flags are
// recorded only for annotator-aware runs (crowd), so other runs' metadata
// names only what they used.
func (o *Options) Record(crowd bool) map[string]string {
	m := map[string]string{}
	for _, f := range Flags {
		if f.Record == Unrecorded || f.Group == GroupCrowd && !crowd {
			continue
		}
		m[f.Name] = f.bind(o).String()
	}
	return m
}

// Changed lists the Compared options whose value in now differs from the
// one last recorded, each as "--flag now (the last run used last)", sorted.
// An option last does not record (a run older than the flag) is not
// compared.
func Changed(last, now map[string]string) []string {
	var diffs []string
	for _, f := range Flags {
		if f.Record != Compared {
			continue
		}
		v, ok := now[f.Name]
		if lv, had := last[f.Name]; ok && had && lv != v {
			diffs = append(diffs, fmt.Sprintf("--%s %s (the last run used %s)", f.Name, v, lv))
		}
	}
	sort.Strings(diffs)
	return diffs
}
