package reportio

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/relabel/relabel/internal/progress"
)

// Text writes the short report `relabel run` prints at its end, in the spirit
// of cleanlab's Datalab.report(): how many labels changed, the n noisiest
// classes (by the posterior's estimated share of wrong given labels), the n
// most confused pairs and the n likeliest wrong labels (and, after an
// annotator-aware run, how many annotators were flagged). The HTML report has
// the full tables; this is what a person reads in a terminal or a CI log.
func (r *Report) Text(w io.Writer, n int) error {
	if n <= 0 {
		n = 5
	}
	var b strings.Builder
	if r.Labelled < r.Rows {
		fmt.Fprintf(&b, "%s of %s rows were unlabelled", plain(r.Rows-r.Labelled), plain(r.Rows))
		if r.Unresolved > 0 {
			fmt.Fprintf(&b, "; %s of them got no clean label (null: no labelled row within their neighbourhoods' reach; more --rounds reach further)", plain(r.Unresolved))
		}
		fmt.Fprintf(&b, ".\n\n")
	}

	if a := r.Annotators; a != nil {
		fmt.Fprintf(&b, "Annotators: %s, of whom %s flagged as spammers and %s as adversaries", plain(a.Annotators), plain(a.Spammers), plain(a.Adversaries))
		if a.TooFew > 0 {
			fmt.Fprintf(&b, "; %s gave fewer than %s labels, not enough labels to judge", plain(a.TooFew), plain(a.MinLabels))
		}
		fmt.Fprintf(&b, " (%s has every annotator).\n", progress.Safe(a.File))
		if c := a.Choice; c != nil {
			if steps := choiceSteps(c); steps != nil {
				fmt.Fprintf(&b, "Model: %s, chosen from the held-out labels of %s items (", progress.Safe(a.Model), plain(c.Items))
				for i, s := range steps {
					if i > 0 {
						fmt.Fprintf(&b, "; ")
					}
					fmt.Fprintf(&b, "%s %s ± %s nats", s.Name, s.Gain, s.SE)
				}
				fmt.Fprintf(&b, ").\n")
			} else {
				fmt.Fprintf(&b, "Model: %s: no item has two labels, so every label is kept as given.\n", progress.Safe(a.Model))
			}
		}
		fmt.Fprintf(&b, "\n")
	}

	classes := make([]ClassRow, 0, len(r.Classes))
	for _, c := range r.Classes {
		if !math.IsNaN(c.NoiseRate) && c.Given > 0 {
			classes = append(classes, c)
		}
	}
	sort.SliceStable(classes, func(i, j int) bool { return classes[i].NoiseRate > classes[j].NoiseRate })
	if len(classes) > n {
		classes = classes[:n]
	}
	if len(classes) > 0 {
		fmt.Fprintf(&b, "Noisiest classes (estimated share of wrong given labels):\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "  class\tgiven\tchanged from\tchanged to\test. noise\t\n")
		for _, c := range classes {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t\n", r.name(c.Class), plain(c.Given), plain(c.ChangedFrom), plain(c.ChangedTo), pct(c.NoiseRate))
		}
		tw.Flush()
	}

	if len(r.Pairs) > 0 {
		fmt.Fprintf(&b, "\nMost changed pairs (given -> clean):\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		for i, p := range r.Pairs {
			if i == n {
				break
			}
			fmt.Fprintf(tw, "  %s -> %s\t%s rows\t%s of given %s\t\n", r.name(int(p.Given)), r.name(int(p.Clean)), plain(p.Count), pct(p.Share), r.name(int(p.Given)))
		}
		tw.Flush()
	}

	if len(r.Suspects) > 0 {
		fmt.Fprintf(&b, "\nLikeliest wrong labels (lowest given_label_prob):\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "  id\tgiven\tclean\tgiven_label_prob\tclean_prob\t\n")
		for i, s := range r.Suspects {
			if i == n {
				break
			}
			var given []string
			for _, g := range s.Given {
				given = append(given, r.name(int(g)))
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%.3f\t%.3f\t\n", progress.Safe(s.ID), strings.Join(given, ","), r.name(int(s.Clean)), s.GivenProb, s.CleanProb)
		}
		tw.Flush()
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// name is class c's display name, as a terminal may show it (progress.Safe:
// a class name's escape sequences and newlines are data, not commands).
func (r *Report) name(c int) string {
	if c >= 0 && c < len(r.Names) {
		return progress.Safe(r.Names[c])
	}
	return fmt.Sprint(c)
}

// plain formats n with comma separators (a terminal's fonts may lack the thin
// space the page uses).
func plain(n int64) string {
	return strings.ReplaceAll(count(n), "\u202f", ",")
}
