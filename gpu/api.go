package gpu

import "errors"

// ErrNotBuilt is returned by every operation of a binary built without the
// cuda (or cudaemu) build tag.
var ErrNotBuilt = errors.New("gpu: built without CUDA support (rebuild with -tags cuda)")

// Defaults of the optional Searcher and Coder fields.
const (
	// DefaultMemoryFraction of the device memory that is free when a search
	// or a batch starts may be used for its buffers.
	DefaultMemoryFraction = 0.5
	// MaxK is the largest k Searcher supports: knn_topk merges the running
	// list with a chunk of at least 2048 - MaxK distances per sort.
	MaxK = 512
)

// Searcher is the CUDA knn.Searcher: exact search by a tiled SGEMM distance
// kernel and a per-query top-K kernel that keeps each query's K best on the
// device across candidate tiles, so only B x K results are copied back.
// Results match knn.CPU's up to float32 rounding (knntest.RelTol), with the
// same self exclusion, padding and lower-index tie-break; searches are
// deterministic. The zero value is ready to use.
type Searcher struct {
	// MemoryFraction is the share of the free device memory (cuMemGetInfo at
	// the start of each search) its buffers may take; the query and candidate
	// blocks shrink to fit. Optional, default DefaultMemoryFraction.
	MemoryFraction float64
	// QueryBlock caps the queries per distance tile. Optional, default 8192
	// (then fitted to memory).
	QueryBlock int
	// CandidateBlock caps the candidates per distance tile. Optional,
	// default 65536 (then fitted to memory).
	CandidateBlock int
}

// Coder is the CUDA llc.Coder: one thread block per neighbourhood forms the
// float64 Gram matrix and runs the CPU's active-set method (llc.CPU) on it, so
// weights agree with the CPU's to rounding and errors name the same
// neighbourhood and neighbour. The zero value is ready to use.
type Coder struct {
	// MemoryFraction is the share of the free device memory one launch may
	// take; larger batches are coded in several launches. Optional, default
	// DefaultMemoryFraction.
	MemoryFraction float64
	// Block caps the neighbourhoods per launch. Optional, default 65536.
	Block int
}

// Rounds is the CUDA engine.Rounder: the sampling and MAP-EM of a round
// (mixture.Round, METHOD.md steps 4-7) as two kernels, one thread per item.
// The draws are the CPU's draw for draw (the kernels reproduce Go's PCG
// seeded by seed, item key and round), and the next states agree with
// engine.RunRound's within roundstest.Tol. The zero value is ready to use.
//
// Settings the kernels do not cover run on the CPU through engine.RunRound:
// the authors' EM variant (mixture.Code, which re-initialises from the
// generator inside EM), more than MaxRoundTrials trials per vector, or
// more than MaxRoundEntries explicit entries per stored row.
type Rounds struct {
	// MemoryFraction is the share of the free device memory one launch may
	// take; larger batches run in several launches. Optional, default
	// DefaultMemoryFraction.
	MemoryFraction float64
	// Block caps the items per launch. Optional, default 65536.
	Block int
}

// Bounds of the rounds kernels' per-thread arrays (ROUNDS_MAX_N and
// ROUNDS_MAX_ENTRIES in gpu/kernels/rounds.cu).
const (
	MaxRoundTrials  = 64
	MaxRoundEntries = 64
)
