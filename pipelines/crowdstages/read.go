package crowdstages

import (
	"context"
	"fmt"
	"log"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/internal/splitmix"
	"github.com/relabel/relabel/io/annotio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

// Bucket is the bucket of an item key among n: a keyed hash, so that the
// bucket of an item does not depend on where its annotations were read.
func Bucket(key int64, n int) int {
	return int(splitmix.Mix64(uint64(key)^0x63726f7764) % uint64(n))
}

// split cuts one file's annotations into one AnnRows per bucket, emitted
// in ascending bucket order.
func split(file, column string, item []int64, strItem []string, ann []int64, name []string, lab []int32, row []int64, buckets int, emit func(int, AnnRows)) {
	per := map[int]*AnnRows{}
	var order []int
	for k, key := range item {
		b := Bucket(key, buckets)
		a := per[b]
		if a == nil {
			a = &AnnRows{Bucket: b, File: file, Column: column}
			per[b] = a
			order = append(order, b)
		}
		a.Item = append(a.Item, key)
		if strItem != nil {
			a.StrItem = append(a.StrItem, strItem[k])
		}
		a.Annotator = append(a.Annotator, ann[k])
		if name != nil {
			a.Name = append(a.Name, name[k])
		}
		a.Label = append(a.Label, lab[k])
		a.Row = append(a.Row, row[k])
	}
	for _, b := range order {
		emit(b, *per[b])
	}
}

// readAnnFn reads one unit of annotation shards into AnnRows by bucket.
type readAnnFn struct {
	Columns annotio.Columns
	Classes int
	Buckets int
}

func (f *readAnnFn) ProcessElement(ctx context.Context, u annotio.Unit, emit func(int, AnnRows)) error {
	b, err := annotio.ReadUnit(ctx, u, annotio.Options{Columns: f.Columns, Classes: f.Classes})
	if err != nil {
		return err
	}
	annotationsRead.Inc(ctx, int64(b.Len()))
	log.Printf("relabel: read annotations %s rows %d..%d", u.Path, b.Offset, b.Offset+int64(b.Len()))
	rows := make([]int64, b.Len())
	for k := range rows {
		rows[k] = b.Offset + int64(k)
	}
	split(u.Path, f.Columns.ID, b.IDs, b.StrIDs, b.Annotators, b.StrAnnotators, b.Labels, rows, f.Buckets, emit)
	return nil
}

// itemAnnFn reads one unit of item shards, its labels and its annotators
// column, into AnnRows by bucket: each labelled entry of an item's labels
// list is an annotation by the annotator at the same position.
type itemAnnFn struct {
	// The serializable part of shardio.ReadOptions, as the items' own read
	// has it: the same unit is refused here for what it is refused there
	// (MaxAbs: features whose squared distances overflow float32 unscaled),
	// whichever read reaches it first.
	Columns    schemas.Columns
	D, Classes int
	ClassNames []string
	MaxAbs     float32
	Column     string
	Buckets    int
}

func (f *itemAnnFn) ProcessElement(ctx context.Context, u shardio.Unit, emit func(int, AnnRows)) error {
	r, err := shardio.ReadUnit(ctx, u, shardio.ReadOptions{Columns: f.Columns, D: f.D, Classes: f.Classes, ClassNames: f.ClassNames, MaxAbsFeature: f.MaxAbs})
	if err != nil {
		return err
	}
	ia, err := annotio.ReadItemAnnotators(ctx, u, f.Column, nil)
	if err != nil {
		return err
	}
	var item, ann, row []int64
	var strItem, name []string
	var lab []int32
	for i, id := range r.IDs {
		labels := r.Labels[r.LabelOff[i]:r.LabelOff[i+1]]
		lo, hi := ia.Off[i], ia.Off[i+1]
		if len(labels) == 1 && labels[0] == schemas.EmptyList {
			labels = nil
		}
		if int(hi-lo) != len(labels) {
			return &annotio.InputError{Path: u.Path, Row: r.Offset + int64(i), Column: f.Column, Pkg: annotio.Pkg,
				Msg: fmt.Sprintf("annotators not aligned with the labels: %d annotators for %d labels", hi-lo, len(labels))}
		}
		for k, l := range labels {
			if l < 0 {
				continue // a null label: nothing was said
			}
			item = append(item, id)
			if r.StrIDs != nil {
				strItem = append(strItem, r.StrIDs[i])
			}
			ann = append(ann, ia.Key[int(lo)+k])
			if ia.Kind == schemas.IDString {
				name = append(name, ia.Name[int(lo)+k])
			}
			lab = append(lab, l)
			row = append(row, r.Offset+int64(i))
		}
	}
	split(u.Path, f.Columns.ID, item, strItem, ann, name, lab, row, f.Buckets, emit)
	return nil
}

var annotationsRead = beam.NewCounter("relabel", "annotations_read")

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*readAnnFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*itemAnnFn)(nil)).Elem())
	register.Emitter2[int, AnnRows]()
}
