// Package keptio holds the files a run keeps for the incremental lake runs
// after it, and their one encoding each: what the rounds fitted besides the
// neighbours (Fit: the linear head's last fit, the pooled start's
// transition, the given-label model's fit), and the ivf partitioning (IVF:
// the k-means model, the standardisation the rows were probed in, and every
// row's probes by id). The pipeline's stages write them piecewise into a
// directory while they run (one file per fit, one per probed batch); the
// launcher gathers that directory (ReadFitDir, ReadIVFDir) into the one file
// the output keeps beside its data (EncodeFitFile, IVF.Encode), which the
// next run reads back (ReadFitFile, ReadIVF).
package keptio
