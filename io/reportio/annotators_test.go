package reportio

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/relabel/relabel/io/annotio"
	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

// annotatorRows draws n annotators over c classes: labels given take few
// values (ties are the point), about a tenth are spammers and a twentieth
// adversaries, and the last is the anonymous one when anon.
func annotatorRows(seed uint64, n, c int, strIDs, anon bool) []annotio.AnnotatorRow {
	rng := rand.New(rand.NewPCG(seed, 9))
	rows := make([]annotio.AnnotatorRow, n)
	for i := range rows {
		r := annotio.AnnotatorRow{Key: int64(1000 + 3*i), Labels: int64(1 + rng.IntN(40)), Accuracy: rng.Float64(), Diagonal: make([]float64, c)}
		if strIDs {
			r.Name = fmt.Sprintf("w%05d", i)
		}
		for k := range r.Diagonal {
			r.Diagonal[k] = rng.Float64()
		}
		switch u := rng.IntN(20); {
		case u < 2:
			r.Spammer = true
		case u < 3:
			r.Adversary = true
		}
		rows[i] = r
	}
	if anon {
		rows[n-1].Anonymous, rows[n-1].Spammer, rows[n-1].Adversary = true, false, false
	}
	return rows
}

// writeAnnotators adds the annotators file to a fixture's directory and
// its counts to summary.json (as an annotator-aware run writes them).
func writeAnnotators(t *testing.T, dir string, f fixture, format shardio.Format, kind schemas.IDKind, rows []annotio.AnnotatorRow, edit func(*resultio.AnnotatorsSummary)) {
	t.Helper()
	name := "annotators" + format.Ext()
	if err := annotio.WriteAnnotators(context.Background(), blobio.Local{}, filepath.Join(dir, name), format, kind, f.c, rows); err != nil {
		t.Fatal(err)
	}
	f.write(t, dir, func(s *resultio.Summary) {
		a := &resultio.AnnotatorsSummary{File: name, Annotators: int64(len(rows)), Strength: 12.5}
		for _, r := range rows {
			if r.Spammer {
				a.Spammers++
			}
			if r.Adversary {
				a.Adversaries++
			}
		}
		if edit != nil {
			edit(a)
		}
		s.Annotators = a
	})
}

// wantAnnotators is the oracle of the table: every flagged annotator up to
// MaxFlaggedAnnotators, then up to others unflagged, each by labels given
// (most first, ties in file order).
func wantAnnotators(rows []annotio.AnnotatorRow, others int) []annotio.AnnotatorRow {
	var flagged, rest []annotio.AnnotatorRow
	for _, r := range rows {
		if r.Spammer || r.Adversary {
			flagged = append(flagged, r)
		} else {
			rest = append(rest, r)
		}
	}
	by := func(x, y annotio.AnnotatorRow) int { return cmp.Compare(y.Labels, x.Labels) }
	slices.SortStableFunc(flagged, by)
	slices.SortStableFunc(rest, by)
	return append(flagged[:min(len(flagged), MaxFlaggedAnnotators)], rest[:min(len(rest), others)]...)
}

func TestAnnotators(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n, c    int
		others  int // Options.Annotators
		format  shardio.Format
		strIDs  bool
		anon    bool
		wantOth int // unflagged rows listed
	}{
		{name: "few, parquet, int ids", n: 40, c: 4, format: shardio.Parquet, wantOth: DefaultAnnotators},
		{name: "few, arrow, string ids, anonymous", n: 40, c: 4, format: shardio.ArrowFile, strIDs: true, anon: true, wantOth: DefaultAnnotators},
		{name: "many, bounded", n: 12000, c: 15, others: 30, format: shardio.Parquet, wantOth: 30},
		{name: "no unflagged listed", n: 300, c: 3, others: -1, format: shardio.Parquet, wantOth: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := randomFixture(5, tc.c, 200, []shardio.Format{tc.format}, nil, false, false)
			dir := t.TempDir()
			kind := schemas.IDInt64
			if tc.strIDs {
				kind = schemas.IDString
			}
			rows := annotatorRows(uint64(tc.n), tc.n, tc.c, tc.strIDs, tc.anon)
			writeAnnotators(t, dir, f, tc.format, kind, rows, nil)
			r, err := Build(context.Background(), dir, Options{Annotators: tc.others})
			if err != nil {
				t.Fatal(err)
			}
			a := r.Annotators
			if a == nil {
				t.Fatal("no annotators report")
			}
			want := wantAnnotators(rows, max(tc.wantOth, 0))
			var spam, adv int64
			for _, x := range rows {
				if x.Spammer {
					spam++
				}
				if x.Adversary {
					adv++
				}
			}
			if a.Annotators != int64(tc.n) || a.Spammers != spam || a.Adversaries != adv {
				t.Errorf("counts %d/%d/%d, want %d/%d/%d", a.Annotators, a.Spammers, a.Adversaries, tc.n, spam, adv)
			}
			if len(a.Rows) != len(want) || a.Hidden != int64(tc.n-len(want)) || a.FlaggedShown+a.OthersShown != int64(len(want)) {
				t.Fatalf("%d rows (%d flagged, %d others), %d hidden; want %d rows, %d hidden", len(a.Rows), a.FlaggedShown, a.OthersShown, a.Hidden, len(want), tc.n-len(want))
			}
			for i, w := range want {
				g := a.Rows[i]
				id := fmt.Sprint(w.Key)
				if tc.strIDs {
					id = w.Name
				}
				if w.Anonymous {
					id = ""
				}
				if g.ID != id || g.Anonymous != w.Anonymous || g.Labels != w.Labels || g.Accuracy != w.Accuracy ||
					!slices.Equal(g.Diagonal, w.Diagonal) || g.Spammer != w.Spammer || g.Adversary != w.Adversary {
					t.Fatalf("row %d: %+v, want %+v", i, g, w)
				}
			}
			// The page lists the same rows; the terminal report says the counts.
			var page bytes.Buffer
			if err := r.Render(&page); err != nil {
				t.Fatal(err)
			}
			body := page.String()
			i := strings.Index(body, `<table id="annotators"`)
			if i < 0 {
				t.Fatal("no annotators table on the page")
			}
			table := body[i : i+strings.Index(body[i:], "</table>")]
			if n := strings.Count(table, "<tr>") - 1; n != len(want) {
				t.Errorf("the page's table has %d rows, want %d", n, len(want))
			}
			if !strings.Contains(body, `<span id="annotators-hidden">`+count(int64(tc.n-len(want)))+`</span>`) {
				t.Errorf("the page does not say %d annotators are not shown", tc.n-len(want))
			}
			var text bytes.Buffer
			if err := r.Text(&text, 3); err != nil {
				t.Fatal(err)
			}
			line := fmt.Sprintf("Annotators: %s, of whom %s flagged as spammers and %s as adversaries", plain(int64(tc.n)), plain(spam), plain(adv))
			if !strings.Contains(text.String(), line) {
				t.Errorf("terminal report lacks %q:\n%s", line, text.String())
			}
		})
	}
}

// TestNoAnnotators: a run without annotators has no section and no line.
func TestNoAnnotators(t *testing.T) {
	f := randomFixture(6, 3, 100, []shardio.Format{shardio.Parquet}, nil, false, false)
	dir := t.TempDir()
	f.write(t, dir, nil)
	r, err := Build(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var page, text bytes.Buffer
	if err := r.Render(&page); err != nil {
		t.Fatal(err)
	}
	if err := r.Text(&text, 3); err != nil {
		t.Fatal(err)
	}
	if r.Annotators != nil || strings.Contains(page.String(), "annotators") || strings.Contains(text.String(), "Annotators") {
		t.Errorf("a run without annotators shows some: %+v", r.Annotators)
	}
}

func TestAnnotatorsErrors(t *testing.T) {
	f := randomFixture(7, 3, 50, []shardio.Format{shardio.Parquet}, nil, false, false)
	rows := annotatorRows(3, 20, 3, false, false)
	for _, tc := range []struct {
		name string
		c    int // classes of the file's diagonal
		edit func(*resultio.AnnotatorsSummary)
		want string
	}{
		{"counts differ", 3, func(a *resultio.AnnotatorsSummary) { a.Spammers++ }, "summary.json says 20 annotators"},
		{"missing file", 3, func(a *resultio.AnnotatorsSummary) { a.File = "gone.parquet" }, "gone.parquet"},
		{"path outside", 3, func(a *resultio.AnnotatorsSummary) { a.File = "../annotators.parquet" }, "want a file name beside the shards"},
		{"diagonal of other classes", 4, nil, `column "diagonal"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			g := f
			if tc.c != f.c {
				g.c = tc.c
			}
			rs := annotatorRows(3, 20, tc.c, false, false)
			if tc.c == f.c {
				rs = rows
			}
			writeAnnotators(t, dir, g, shardio.Parquet, schemas.IDInt64, rs, tc.edit)
			if tc.c != f.c {
				f.write(t, dir, func(s *resultio.Summary) { // the shards' classes, the file's counts
					s.Annotators = &resultio.AnnotatorsSummary{File: "annotators.parquet", Annotators: 20}
				})
			}
			_, err := Build(context.Background(), dir, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Build = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestAnnotatorsTooFew: annotators with fewer labels than summary.json's
// min_labels are counted from the file, must match its too_few, and are
// shown as "not enough labels", never as spammers, on the page and in the
// terminal line (a long tail of one-label annotators was reported
// as spammers). A count that disagrees with the file is an error.
func TestAnnotatorsTooFew(t *testing.T) {
	const n, minLabels = 60, 10
	f := randomFixture(8, 3, 100, []shardio.Format{shardio.Parquet}, nil, false, false)
	rows := annotatorRows(5, n, 3, false, false)
	var tooFew int64
	for i := range rows {
		if rows[i].Labels < minLabels { // as the model writes them: not judged
			rows[i].Spammer, rows[i].Adversary = false, false
			tooFew++
		}
	}
	if tooFew == 0 || tooFew == n {
		t.Fatalf("fixture: %d of %d annotators below %d labels; want some, not all", tooFew, n, minLabels)
	}
	dir := t.TempDir()
	writeAnnotators(t, dir, f, shardio.Parquet, schemas.IDInt64, rows, func(a *resultio.AnnotatorsSummary) { a.MinLabels, a.TooFew = minLabels, tooFew })
	r, err := Build(context.Background(), dir, Options{Annotators: n})
	if err != nil {
		t.Fatal(err)
	}
	if r.Annotators.TooFew != tooFew || r.Annotators.MinLabels != minLabels {
		t.Errorf("too few %d below %d, want %d below %d", r.Annotators.TooFew, r.Annotators.MinLabels, tooFew, minLabels)
	}
	var page, text bytes.Buffer
	if err := r.Render(&page); err != nil {
		t.Fatal(err)
	}
	if err := r.Text(&text, 3); err != nil {
		t.Fatal(err)
	}
	body := page.String()
	if got := int64(strings.Count(body, "not enough labels</td>")); got != tooFew {
		t.Errorf("the page's table says \"not enough labels\" %d times, want %d", got, tooFew)
	}
	if !strings.Contains(body, `id="annotators-toofew">`+count(tooFew)+`<`) {
		t.Errorf("the page lacks the card of %d annotators with too few labels", tooFew)
	}
	line := fmt.Sprintf("; %s gave fewer than %d labels, not enough labels to judge", plain(tooFew), minLabels)
	if !strings.Contains(text.String(), line) {
		t.Errorf("terminal report lacks %q:\n%s", line, text.String())
	}
	// summary.json's count must agree with the file.
	dir2 := t.TempDir()
	writeAnnotators(t, dir2, f, shardio.Parquet, schemas.IDInt64, rows, func(a *resultio.AnnotatorsSummary) { a.MinLabels, a.TooFew = minLabels, tooFew+1 })
	if _, err := Build(context.Background(), dir2, Options{}); err == nil || !strings.Contains(err.Error(), "too few labels") {
		t.Errorf("too_few disagreeing with the file: err %v", err)
	}
}

// TestAnnotatorsModelChoice: the model summary.json says the posteriors
// come from, and the held-out comparisons behind it, are on the page (a
// card, a table of the two comparisons with whether each passed one
// standard error) and in the terminal report; a summary that records no
// choice shows none.
func TestAnnotatorsModelChoice(t *testing.T) {
	f := randomFixture(9, 4, 100, []shardio.Format{shardio.Parquet}, nil, false, false)
	rows := annotatorRows(11, 30, 4, false, false)
	for _, tc := range []struct {
		name   string
		model  string
		choice *resultio.ChoiceSummary
		// want are the table's rows (name, gain, se, beyond), nil for no
		// table; text is the terminal line, "" for none.
		want [][4]string
		text string
	}{
		{name: "annotators", model: "annotators",
			choice: &resultio.ChoiceSummary{Items: 2665, PooledGain: 1528.44, PooledSE: 74.21, AnnotatorsGain: 3186.9, AnnotatorsSE: 92.06},
			want:   [][4]string{{"pooled over vote", "1528.4", "74.2", "yes"}, {"annotators over pooled", "3186.9", "92.1", "yes"}},
			text:   "Model: annotators, chosen from the held-out labels of 2,665 items (pooled over vote 1528.4 ± 74.2 nats; annotators over pooled 3186.9 ± 92.1 nats)."},
		{name: "pooled, annotators within noise", model: "pooled",
			choice: &resultio.ChoiceSummary{Items: 600, PooledGain: 12, PooledSE: 3, AnnotatorsGain: -4.5, AnnotatorsSE: 6},
			want:   [][4]string{{"pooled over vote", "12.0", "3.0", "yes"}, {"annotators over pooled", "-4.5", "6.0", "no"}},
			text:   "Model: pooled, chosen from the held-out labels of 600 items (pooled over vote 12.0 ± 3.0 nats; annotators over pooled -4.5 ± 6.0 nats)."},
		{name: "vote, one label per item", model: "vote", choice: &resultio.ChoiceSummary{},
			text: "Model: vote: no item has two labels, so every label is kept as given."},
		{name: "no choice recorded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeAnnotators(t, dir, f, shardio.Parquet, schemas.IDInt64, rows, func(a *resultio.AnnotatorsSummary) { a.Model, a.Choice = tc.model, tc.choice })
			r, err := Build(context.Background(), dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var page, text bytes.Buffer
			if err := r.Render(&page); err != nil {
				t.Fatal(err)
			}
			if err := r.Text(&text, 3); err != nil {
				t.Fatal(err)
			}
			body := page.String()
			card := `<b id="annotators-model">` + tc.model + `</b>`
			if got := strings.Contains(body, card); got != (tc.choice != nil) {
				t.Errorf("page has the model card %q: %v, want %v", card, got, tc.choice != nil)
			}
			i := strings.Index(body, `<table id="annotators-choice"`)
			if (i >= 0) != (tc.want != nil) {
				t.Fatalf("page has the choice table: %v, want %v", i >= 0, tc.want != nil)
			}
			if i >= 0 {
				table := body[i : i+strings.Index(body[i:], "</table>")]
				var got [][4]string
				cell := regexp.MustCompile(`<tr><td class="l">([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td><td class="l">([^<]*)</td></tr>`)
				for _, m := range cell.FindAllStringSubmatch(table, -1) {
					got = append(got, [4]string{m[1], m[2], m[3], m[4]})
				}
				if !slices.Equal(got, tc.want) {
					t.Errorf("choice table %q, want %q", got, tc.want)
				}
				if scored := `<span id="annotators-scored">` + count(tc.choice.Items) + `</span>`; !strings.Contains(body, scored) {
					t.Errorf("page lacks %q", scored)
				}
			}
			if tc.choice != nil && tc.choice.Items == 0 && !strings.Contains(body, "no item has two labels") {
				t.Errorf("page does not say that no item has two labels")
			}
			if tc.choice == nil && strings.Contains(body, "annotators-choice-note") {
				t.Errorf("a summary without a choice shows one")
			}
			if tc.text == "" {
				if strings.Contains(text.String(), "Model:") {
					t.Errorf("terminal report names a model none was recorded:\n%s", text.String())
				}
			} else if !strings.Contains(text.String(), tc.text) {
				t.Errorf("terminal report lacks %q:\n%s", tc.text, text.String())
			}
		})
	}
}

// TestAnnotatorsModelChoiceErrors: a model the runs do not choose, a model
// without its evidence and negative evidence are errors naming
// summary.json.
func TestAnnotatorsModelChoiceErrors(t *testing.T) {
	f := randomFixture(10, 3, 50, []shardio.Format{shardio.Parquet}, nil, false, false)
	rows := annotatorRows(12, 20, 3, false, false)
	for _, tc := range []struct {
		name   string
		model  string
		choice *resultio.ChoiceSummary
		want   string
	}{
		{"unknown model", "dawid-skene", &resultio.ChoiceSummary{Items: 3}, `annotators model "dawid-skene", want one of vote, pooled, annotators`},
		{"evidence without a model", "", &resultio.ChoiceSummary{Items: 3}, `annotators model "", want one of`},
		{"model without evidence", "pooled", nil, `annotators model "pooled" without its evidence`},
		{"negative standard error", "vote", &resultio.ChoiceSummary{Items: 3, PooledSE: -1}, "negative items or standard error"},
		{"negative items", "vote", &resultio.ChoiceSummary{Items: -1}, "negative items or standard error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeAnnotators(t, dir, f, shardio.Parquet, schemas.IDInt64, rows, func(a *resultio.AnnotatorsSummary) { a.Model, a.Choice = tc.model, tc.choice })
			_, err := Build(context.Background(), dir, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "summary.json") {
				t.Errorf("Build = %v, want an error naming summary.json and containing %q", err, tc.want)
			}
		})
	}
}
