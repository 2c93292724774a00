//go:build cuda

package kernels

import _ "embed"

//go:generate bash ptx.sh generate

// KNN is the PTX of knn.cu (kernels knn_dist, knn_topk).
//
//go:embed knn.ptx
var KNN string

// LLC is the PTX of llc.cu (kernel llc_code).
//
//go:embed llc.ptx
var LLC string

// Rounds is the PTX of rounds.cu (kernels rounds_sample, rounds_em).
//
//go:embed rounds.ptx
var Rounds string
