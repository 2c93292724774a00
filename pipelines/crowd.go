package pipelines

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/io/spillio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/pipelines/crowdstages"
	"github.com/relabel/relabel/pipelines/stages"
	"github.com/relabel/relabel/schemas"
)

// annotations reads the job's annotations into PCollection<KV<int,
// crowdstages.AnnRows>>.
func annotations(s beam.Scope, j *job.Job, units beam.PCollection) beam.PCollection {
	cp := j.Crowd
	if cp.Units != nil {
		return crowdstages.ReadAnnotations(s, beam.CreateList(s, cp.Units), cp.Read, cp.Buckets)
	}
	return crowdstages.ReadItemAnnotators(s, units, j.Read, cp.Column, cp.Buckets)
}

// crowdParams are the crowd stages' parameters for the job j, writing
// into d.
func crowdParams(j *job.Job, d job.Dirs) crowdstages.Params {
	cp := j.Crowd
	return crowdstages.Params{Crowd: cp.Model, Buckets: cp.Buckets, C0: cp.C0, IDKind: cp.IDKind, AnnotatorKind: cp.AnnotatorKind,
		Format: j.Format(), TmpDir: d.Tmp, Spill: spillio.Dir(d.Spill)}
}

// buildLabelOnly is Build for label-only mode.
func buildLabelOnly(s beam.Scope, j *job.Job, d job.Dirs) {
	items := crowdstages.LabelOnly(s, annotations(s, j, beam.PCollection{}), crowdParams(j, d))
	stages.Write(s, items, writeParams(j, d.Tmp))
}

// buildCrowdFeatures runs the crowd stages on the items with neighbours.
func buildCrowdFeatures(s beam.Scope, j *job.Job, d job.Dirs, units, items beam.PCollection) beam.PCollection {
	return crowdstages.WithFeatures(s, items, annotations(s, j, units), crowdParams(j, d))
}

// writeParams configures stages.Write for the job j, writing into tmpDir.
func writeParams(j *job.Job, tmpDir string) stages.WriteParams {
	return stages.WriteParams{
		TmpDir: tmpDir, Format: j.Format(),
		Meta:      schemas.Metadata(job.Version, j.Seed(), j.Recorded(), j.ClassNames),
		LabelKind: j.LabelKind, ClassNames: j.ClassNames, IDKind: j.IDKind, C: j.C,
		Cal: j.Calibration(),
	}
}
