#!/usr/bin/env python3
"""The peer relabel is measured against (issue 14 target 1, issue 37 target 4).

scikit-learn's exact 10-NN graph of the z-scored features (11 neighbours with
the point itself), then the kNN majority vote as the cleaned label; with
cleanlab installed, also cleanlab's find_label_issues on the vote fractions
(flagged labels replaced by the kNN argmax), as ../shared/data/README.md's peer
table does. The same peer as cmd/relabel's BenchmarkVsSklearn (which runs only
the kneighbors step); this file is carried to machines without the Go
toolchain by scripts/device-bundle.sh.

Usage: peer_knn.py INPUT.parquet [TRUTH.i32]
Prints one JSON object: rows, d, seconds of the whole peer (read excluded),
of kneighbors alone, and accuracies against the truth when given.
"""
import json
import sys
import time

import numpy as np
import pyarrow.parquet as pq
from sklearn.neighbors import NearestNeighbors


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    t = pq.read_table(sys.argv[1], columns=["id", "features", "label"])
    ids = t.column("id").to_numpy()
    n = t.num_rows
    # list<float> or fixed_size_list<float>[d]: flatten() gives the n*d values.
    flat = t.column("features").combine_chunks().flatten()
    x = np.asarray(flat.to_numpy(zero_copy_only=False), dtype=np.float32).reshape(n, -1)
    d = x.shape[1]
    y = np.asarray(t.column("label").to_numpy(), dtype=np.int64)
    c = int(y.max()) + 1
    out = {"rows": n, "d": d, "classes": c}

    t0 = time.time()
    mean, sd = x.mean(axis=0), x.std(axis=0)
    sd[sd == 0] = 1
    z = (x - mean) / sd
    t1 = time.time()
    _, nb = NearestNeighbors(n_neighbors=11).fit(z).kneighbors(z)
    out["kneighbors_s"] = time.time() - t1
    nb = nb[:, 1:]  # drop the point itself
    votes = np.zeros((n, c), dtype=np.float64)
    for j in range(nb.shape[1]):
        np.add.at(votes, (np.arange(n), y[nb[:, j]]), 1.0)
    vote = votes.argmax(axis=1)
    out["vote_s"] = time.time() - t0
    cleaned_cl = None
    try:
        from cleanlab.filter import find_label_issues

        probs = (votes + 1e-3) / (votes + 1e-3).sum(axis=1, keepdims=True)
        issues = find_label_issues(labels=y, pred_probs=probs)
        cleaned_cl = np.where(issues, vote, y)
        out["cleanlab_s"] = time.time() - t0
    except ImportError:
        out["cleanlab"] = "not installed"
    out["total_s"] = time.time() - t0

    if len(sys.argv) == 3:
        truth = np.fromfile(sys.argv[2], dtype="<i4")
        tt = truth[ids]
        out["noisy_acc"] = float((y == tt).mean())
        out["vote_acc"] = float((vote == tt).mean())
        if cleaned_cl is not None:
            out["cleanlab_acc"] = float((cleaned_cl == tt).mean())
    print(json.dumps(out))


if __name__ == "__main__":
    main()
