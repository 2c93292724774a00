package knn

import "fmt"

// Metric selects the distance a search ranks by.
type Metric int

const (
	// L2 ranks by squared Euclidean distance ||q-p||^2 (METHOD.md step 1).
	L2 Metric = iota
	// Cosine ranks by 1 - cos(q, p); zero vectors are at distance 1 from everything.
	Cosine
)

func (m Metric) String() string {
	switch m {
	case L2:
		return "l2"
	case Cosine:
		return "cosine"
	}
	return fmt.Sprintf("Metric(%d)", int(m))
}

// Matrix is a dense row-major float32 matrix: row i is Data[i*Cols:(i+1)*Cols].
type Matrix struct {
	Rows, Cols int
	Data       []float32
}

// Row returns row i without copying.
func (m Matrix) Row(i int) []float32 { return m.Data[i*m.Cols : (i+1)*m.Cols] }

// Result holds the K nearest candidates of each of B queries, nearest first:
// Index[b*K+j] is a row of the indexed candidate matrix, Dist[b*K+j] its distance.
// When fewer than K candidates are eligible the tail is padded with Index -1 and
// Dist +Inf. Ties in distance are broken by the lower candidate index.
type Result struct {
	K     int
	Index []int32
	Dist  []float32
}

// Reset sizes r for b queries of k neighbours, reusing its storage.
func (r *Result) Reset(b, k int) {
	r.K = k
	if cap(r.Index) < b*k {
		r.Index = make([]int32, b*k)
		r.Dist = make([]float32, b*k)
	}
	r.Index = r.Index[:b*k]
	r.Dist = r.Dist[:b*k]
}

// Searcher builds a searchable Index over a candidate set. It is the interface the
// CPU kernels (pure Go and OpenBLAS) and the CUDA backend (gpu/, build tag cuda)
// implement; knntest.Run checks any implementation against brute force.
type Searcher interface {
	// Index prepares candidates (S x d) with their ids for repeated searches. The
	// Index may keep a reference to c.Data; callers must not modify it afterwards.
	Index(c Matrix, ids []int64, m Metric) (Index, error)
}

// Index answers batched K-nearest-neighbour queries against one candidate set.
type Index interface {
	// Search writes the k nearest candidates of every query row of q into dst
	// (dst is Reset to q.Rows x k). A candidate whose id equals the query's id in
	// qIDs is excluded (an item is not its own neighbour). q.Cols must equal the
	// candidates' dimension; mismatches are programmer errors and panic.
	Search(dst *Result, q Matrix, qIDs []int64, k int) error
	// Close releases resources (device memory for GPU backends).
	Close() error
}
