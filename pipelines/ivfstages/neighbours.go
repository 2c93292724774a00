package ivfstages

import (
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/pipelines/stages"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/ivf"
)

// Params configures Neighbours.
type Params struct {
	// Partitioning configures the k-means partitions: every field, as
	// ivf.DefaultParams(Rows) and the run's choices give them; its Metric is
	// Search.Metric's. Required.
	Partitioning ivf.Params
	// Rows is the expected row count (the plan's, from the shard footers), to
	// size the duplicate check and the waves before anything is read.
	// Optional: 0 sizes them for one row.
	Rows int64
	// Search configures the search inside blocks, the weights and the
	// initial states, as for the exact path; Search.Standardise also
	// z-scores the features the partitions are fitted on. Required.
	Search engine.NeighbourParams
	// IDColumn names the id column in duplicate errors. Optional.
	IDColumn string
	// D is the feature dimension, for sizing the waves. Optional.
	D int
	// WaveBytes bounds the item copies one wave of the search shuffles
	// (Waves). Optional: 0 means DefaultWaveBytes, negative means one wave.
	WaveBytes int64
	// Units (PCollection<shardio.Unit>), when valid, are read again with
	// stages.ReadAgain for the probe, which waits for the model fitted on
	// all of rows, once the model is ready. Optional: without them the probe
	// takes rows, which the runner then holds until the model is fitted.
	Units beam.PCollection
	Read  shardio.ReadOptions
	// Spill, when on, holds the items' copies for the blocks and the
	// searched blocks in files, and the search runs in one wave (WaveBytes
	// is ignored; the probe fuses with the copies): see Spill. Optional,
	// default off.
	Spill Spill
	// Keep, when set, is a directory (a blobio path every worker can write)
	// where the partitioning is kept for keptio.ReadIVFDir: the model, the
	// moments and every row's probes. Optional, default none.
	Keep string
	// Features keeps every item's features (as searched) in its block
	// (Block.X), for the local rounds' linear head (JoinRoundsParams.Head):
	// 4 D bytes a row more in every block. Optional, default off.
	Features bool
}

// Waves is how many waves of at most waveBytes (0: DefaultWaveBytes;
// negative: no bound) a shuffle of total bytes takes.
func Waves(total, waveBytes int64) int {
	switch {
	case waveBytes < 0:
		return 1
	case waveBytes == 0:
		waveBytes = DefaultWaveBytes
	}
	return int(max(1, (total+waveBytes-1)/waveBytes))
}

// DefaultWaveBytes bounds what one wave of the search or of a round
// shuffles. Prism keeps a shuffle's input in memory several times over while
// it runs (the producing bundle's output buffer, the stored elements, the
// consuming bundle's input, the SDK's copy), so waves bound the memory of
// those steps on the embedded runner. On a distributed runner a wave is one
// more stage to schedule, and memory is spread over workers: no waves there.
const DefaultWaveBytes = 128 << 20

// dupBucketRows is the mean number of keys per duplicate-check bucket.
const dupBucketRows = 1 << 16

// Neighbours finds every item's neighbours with an inverted-file index
// (transforms/ivf) and emits the items grouped by block with their
// neighbourhoods and initial states. rows: PCollection<schemas.Rows>.
// Returns PCollection<Block>.
//
// The global steps are small: the moments (O(batches x D)), a k-means sample
// (O(ivf.MaxSample x D)) and the centroids (O(P x D)). Everything O(rows) is
// keyed: duplicate ids meet in hash buckets, and items are shuffled to their
// blocks, each searched on its own (exact kNN of its home items against the
// items stored in its partition).
func Neighbours(s beam.Scope, rows beam.PCollection, p Params) beam.PCollection {
	s = s.Scope("relabel.ivf.Neighbours")
	if err := p.Partitioning.Validate(); err != nil {
		panic(fmt.Sprintf("ivfstages: Neighbours: %v", err))
	}
	if err := p.Search.Validate(); err != nil {
		panic(fmt.Sprintf("ivfstages: Neighbours: %v", err))
	}
	ip := p.Partitioning
	ip.Metric = p.Search.Metric
	capRows := ip.Sample
	stats := stages.ComputeMoments(s, rows)
	sample := beam.Combine(s, &sampleFn{Cap: capRows, Seed: ip.Seed}, rows)
	model := beam.ParDo(s, &fitFn{P: ip, Standardise: p.Search.Standardise, Keep: p.Keep}, sample, beam.SideInput{Input: stats})

	buckets := int(max(1, (max(p.Rows, 1)+dupBucketRows-1)/dupBucketRows))
	frags := beam.ParDo(s, &dupBucketFn{Buckets: buckets}, rows)
	dups := beam.ParDo(s, &dupCheckFn{IDColumn: p.IDColumn}, beam.GroupByKey(s, frags))
	dup := beam.Combine(s, &firstDupFn{}, dups)

	np := ip.NProbe
	probeRows := rows
	if p.Units.IsValid() {
		// The model as a side input holds the second read back until it
		// is fitted, so the read fuses with the probe and the search's
		// copies: no row waits in the runner.
		ready := beam.ParDo(s, &afterModelFn{}, p.Units, beam.SideInput{Input: model})
		probeRows = stages.ReadAgain(s, ready, p.Read)
	}
	probed := beam.ParDo(s, &probeFn{NProbe: np, Standardise: p.Search.Standardise, Keep: p.Keep}, probeRows,
		beam.SideInput{Input: stats}, beam.SideInput{Input: model})
	// Waves: each item goes to NProbe partitions, so the copies are NProbe
	// times the input. An embedded runner holds a shuffle's input in memory
	// (Prism: a few times over), so the partitions are searched in waves of
	// about WaveBytes of copies, one after the other: the next wave's copies
	// are made once the previous wave's search is done.
	waves := Waves(max(p.Rows, 1)*int64(np)*int64(4*max(p.D, 1)+24), p.WaveBytes)
	if p.Spill.On() {
		waves = 1 // the shuffle carries references
	}
	token := beam.ParDo(s, &modelTokenFn{}, model)
	var all []beam.PCollection
	for w := 0; w < waves; w++ {
		ws := s.Scope(fmt.Sprintf("wave%02d", w))
		sides := []beam.Option{beam.SideInput{Input: model}, beam.SideInput{Input: dup}, beam.SideInput{Input: token}}
		var blocks beam.PCollection
		if p.Spill.On() {
			// One element per batch and group of blocks (PartRefs says why).
			refs := beam.ParDo(ws, &emitRefsFn{Wave: w, Waves: waves, Spill: p.Spill}, probed, sides...)
			blocks, token = beam.ParDo2(ws, &searchRefsFn{P: p.Search, Spill: p.Spill, Features: p.Features}, beam.GroupByKey(ws, refs))
		} else {
			parts := beam.ParDo(ws, &emitFn{Wave: w, Waves: waves}, probed, sides...)
			blocks, token = beam.ParDo2(ws, &searchFn{P: p.Search, Spill: p.Spill, Features: p.Features}, beam.GroupByKey(ws, parts))
		}
		all = append(all, blocks)
	}
	if len(all) == 1 {
		return all[0]
	}
	return beam.Flatten(s, all...)
}

// afterModelFn passes units on once the model (its side input) is fitted.
type afterModelFn struct{}

func (afterModelFn) ProcessElement(u shardio.Unit, _ ivf.Model, emit func(shardio.Unit)) { emit(u) }

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*afterModelFn)(nil)).Elem())
	register.Emitter1[shardio.Unit]()
}

// rebatch groups BatchItems (PCollection<KV<string, BatchItems>>, by input batch)
// into the batches' stages.Items. Returns PCollection<stages.Items>, or
// with sp on PCollection<stages.SpilledItems> (stages.WritePooled takes
// either).
func rebatch(s beam.Scope, rows beam.PCollection, sp Spill) beam.PCollection {
	if sp.On() {
		return beam.ParDo(s, &rebatchSpillFn{Spill: sp}, beam.GroupByKey(s, rows))
	}
	return beam.ParDo(s, &rebatchFn{}, beam.GroupByKey(s, rows))
}
