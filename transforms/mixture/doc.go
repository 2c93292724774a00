// Package mixture is the per-item math of relabel (METHOD.md steps 3-7): the
// sparse per-item state (top-C0 clean-label posterior pi and the matching rows of
// the transition matrix rho), the sampler that draws L N-trial noisy-label count
// vectors from the (K+1) x C0-component multinomial mixture of an item and its
// neighbours, MAP-EM over those draws, the gamma update and the top-C0
// truncation, all wrapped by Round, the unit the pipeline fans out per item.
//
// Nothing here costs O(C^2) or allocates C x C per item: a rho row stores
// explicit probabilities only for the categories it has seen, plus one remainder
// mass shared uniformly by the other categories. The package imports neither Beam
// nor Arrow; pipelines/stages wraps it in DoFns.
package mixture
