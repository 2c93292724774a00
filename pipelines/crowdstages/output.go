package crowdstages

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/io/annotio"
	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/pipelines/stages"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/crowd"
	"github.com/relabel/relabel/transforms/mixture"
)

// toItemsFn turns a final Batch into stages.Items for stages.Write: each
// item's state is its posterior's C0 most probable classes (ties to the
// lower class), with no transition rows.
type toItemsFn struct {
	C0 int
}

func (f *toItemsFn) ProcessElement(b Batch, emit func(stages.Items)) error {
	if err := b.unspill(); err != nil {
		return err
	}
	it := stages.Items{Shard: b.Shard, Offset: b.Offset, IDKind: b.IDKind, IDs: b.IDs, StrIDs: b.StrIDs,
		Labels: b.Labels, LabelOff: b.LabelOff, Multi: b.Multi} // no neighbours: the output needs none
	it.State.Reset()
	C := b.C
	order := make([]int32, C)
	var st mixture.State
	for i := 0; i < b.Len(); i++ {
		p := b.Post[i*C : (i+1)*C]
		for c := range order {
			order[c] = int32(c)
		}
		slices.SortFunc(order, func(x, y int32) int {
			if c := cmp.Compare(p[y], p[x]); c != 0 {
				return c
			}
			return cmp.Compare(x, y)
		})
		st.Class, st.Pi = st.Class[:0], st.Pi[:0]
		st.Rows = st.Rows[:0]
		for _, c := range order[:min(f.C0, C)] {
			st.Class = append(st.Class, c)
			st.Pi = append(st.Pi, p[c])
			st.Rows = append(st.Rows, mixture.Row{})
		}
		it.State.Append(&st)
	}
	emit(it)
	return nil
}

// Report describes e for the summary.
func Report(e crowd.Evidence) (string, *resultio.ChoiceSummary) {
	r := &resultio.ChoiceSummary{Items: e.Items}
	r.PooledGain, r.PooledSE = e.Gain(crowd.Pooled)
	r.AnnotatorsGain, r.AnnotatorsSE = e.Gain(crowd.Annotators)
	return e.Choice().String(), r
}

// writeAnnotatorsFn writes the annotators file of the final model and its
// report into the temporary directory.
type writeAnnotatorsFn struct {
	TmpDir string
	Format shardio.Format
	Kind   schemas.IDKind
	Params crowd.Params
}

func (f *writeAnnotatorsFn) ProcessElement(ctx context.Context, mm modelMsg, names Names, ev crowd.Evidence) error {
	pm, err := mm.get()
	if err != nil {
		return err
	}
	m := *pm
	if names.Clash != "" {
		return fmt.Errorf("crowdstages: %s", names.Clash)
	}
	rows := Summaries(&m, f.Params, names)
	fs, err := blobio.For(f.TmpDir)
	if err != nil {
		return err
	}
	name := resultio.AnnotatorsName(f.Format)
	if err := annotio.WriteAnnotators(ctx, fs, blobio.Join(f.TmpDir, name), f.Format, f.Kind, m.C, rows); err != nil {
		return err
	}
	rep := resultio.AnnotatorsSummary{File: name, Annotators: int64(len(rows)), Strength: m.Strength, MinLabels: int64(f.Params.FlagLabels)}
	rep.Model, rep.Choice = Report(ev)
	for _, r := range rows {
		if r.Spammer {
			rep.Spammers++
		}
		if r.Adversary {
			rep.Adversaries++
		}
		if r.Labels < rep.MinLabels {
			rep.TooFew++
		}
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	return blobio.WriteFile(ctx, fs, blobio.Join(f.TmpDir, name+resultio.ReportSuffix), b)
}

// Summaries are the annotators file's rows of model m: every annotator in
// ascending key order (by name for string ids), the Anonymous one last.
func Summaries(m *crowd.Model, p crowd.Params, names Names) []annotio.AnnotatorRow {
	var rows []annotio.AnnotatorRow
	var anon []annotio.AnnotatorRow
	for _, s := range m.Summarise(p) {
		r := annotio.AnnotatorRow{Key: s.Key, Labels: s.Given, Accuracy: s.Accuracy, Lift: s.Lift, Misdir: s.Misdirected,
			Diagonal: s.Diagonal, Spammer: s.Spammer, Adversary: s.Adversary}
		if s.Key == Anonymous {
			r.Anonymous = true
			anon = append(anon, r)
			continue
		}
		if k, ok := slices.BinarySearch(names.Key, s.Key); ok {
			r.Name = names.Name[k]
		}
		rows = append(rows, r)
	}
	if names.Key != nil {
		slices.SortFunc(rows, func(a, b annotio.AnnotatorRow) int { return cmp.Compare(a.Name, b.Name) })
	}
	return append(rows, anon...)
}

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*toItemsFn)(nil)).Elem())
	register.Emitter1[stages.Items]()
	beam.RegisterDoFn(reflect.TypeOf((*writeAnnotatorsFn)(nil)).Elem())
}
