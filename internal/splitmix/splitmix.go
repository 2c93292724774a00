// Package splitmix holds the splitmix64 finaliser that relabel's keyed hashes
// and seeds are built from: candidate selection (engine.CandidateHash), the
// k-means sample and duplicate buckets (ivf.Hash), and the sampler's
// per-(key, round) stream (mixture.Sampler.Seed).
//
// One copy, because outputs are pinned to its exact values: a second copy
// drifting would change which items are candidates or sampled. math/rand/v2
// offers no stateless 64-bit mixer (its PCG and ChaCha8 are stateful
// generators), and hash/maphash is seeded per process, so neither fits a
// hash that must be equal on every worker and every run.
package splitmix

// Golden is 2^64 / phi, splitmix64's increment: the constant keyed hashes
// multiply their seed by so that nearby seeds give unrelated masks.
const Golden = 0x9e3779b97f4a7c15

// Mix64 is the splitmix64 finaliser (Steele, Lea and Flood, "Fast splittable
// pseudorandom number generators", OOPSLA 2014; the variant of Stafford's
// Mix13): a bijection of uint64 that decorrelates nearby inputs.
func Mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
