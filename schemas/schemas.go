package schemas

// Default input column names (overridable by flags).
const (
	ColID       = "id"
	ColFeatures = "features"
	ColLabel    = "label"
	ColLabels   = "labels"
)

// Output column names.
const (
	ColCleanLabel     = "clean_label"
	ColCleanProb      = "clean_prob"
	ColGivenLabelProb = "given_label_prob"
	ColChanged        = "changed"
	ColPosterior      = "posterior"
	FieldClass        = "class"
	FieldProb         = "prob"
)

// IDKind says how the id column is typed.
type IDKind uint8

const (
	IDInt64 IDKind = iota
	IDString
)

// LabelKind says how labels are typed in the input (and so in the output).
type LabelKind uint8

const (
	LabelInt32 LabelKind = iota
	LabelInt64
	LabelString
)

// Unlabelled marks a missing (null) label in Rows.Labels: a null single
// label, or a null inside a list of annotations.
const Unlabelled = -1

// EmptyList, alone in a row's Labels, marks a list of annotations that is
// present but empty ([]), as distinct from a null list, which has no entries:
// the output gives the labels back as they came. Like Unlabelled it is
// negative, so that everything counting annotations passes it by.
const EmptyList = -2

// Rows is a batch of input rows of one shard (one Parquet row group or one Arrow
// record batch, possibly split): the element the reader emits. Features of float64
// inputs are converted to float32. Labels are class indices in [0, C), already
// validated against the class set; string labels are mapped through the sorted
// class names.
type Rows struct {
	Shard  string // input path, as globbed
	Offset int64  // row index of the first row within the shard
	IDKind IDKind
	IDs    []int64  // IDInt64 ids; for IDString ids, Key(StrIDs[i])
	StrIDs []string // IDString ids, else nil
	D      int
	// Features is len(IDs) x D, row-major.
	Features []float32
	// Labels holds each row's annotations: row i's are
	// Labels[LabelOff[i]:LabelOff[i+1]]; a single-label column gives one per row
	// (Unlabelled for null). A list column gives its entries in order
	// (Unlabelled for a null entry), none for a null list and the one entry
	// EmptyList for an empty list. len(LabelOff) == len(IDs)+1.
	Labels   []int32
	LabelOff []int32
	// Multi is true when the input had a list column of annotations.
	Multi bool
}

// Len is the number of rows in the batch.
func (r *Rows) Len() int { return len(r.IDs) }

// Cleaned is a batch of output rows of one shard, in input row order.
type Cleaned struct {
	Shard  string
	Offset int64
	IDKind IDKind
	IDs    []int64
	StrIDs []string
	// Labels/LabelOff: the given annotations, as in Rows.
	Labels   []int32
	LabelOff []int32
	Multi    bool
	// CleanLabel, CleanProb, GivenProb, Changed: one per row. GivenProb is the
	// posterior of the given label (of the majority annotation when several;
	// NaN when unlabelled).
	CleanLabel []int32
	CleanProb  []float32
	GivenProb  []float32
	Changed    []bool
	// Posterior: row i's top-C0 (class, prob) pairs, most probable first, are
	// PostClass/PostProb[PostOff[i]:PostOff[i+1]].
	PostOff   []int32
	PostClass []int32
	PostProb  []float32
}

// Len is the number of rows in the batch.
func (c *Cleaned) Len() int { return len(c.IDs) }
