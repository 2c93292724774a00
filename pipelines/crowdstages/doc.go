// Package crowdstages runs the annotator-aware model (transforms/crowd) as
// Beam stages: annotations are read in units (io/annotio), keyed by a hash
// of their item's id into buckets and joined to the items there (no worker
// holds all annotations); every EM iteration combines the annotators'
// expected counts over all items (crowd.Stats, integer sums, so any bundling
// gives the same model), estimates the model once and broadcasts it as a
// side input to the E step, which runs per batch of items. LabelOnly is the
// mode without features (one output row per item id seen in the
// annotations); WithFeatures runs on the items of pipelines/stages, with
// each item's prior from its neighbours' posteriors of the previous
// iteration, broadcast like relabel's candidate states. Both end in
// stages.Items, for stages.Write, and write the annotators file.
package crowdstages
