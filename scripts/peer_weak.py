#!/usr/bin/env python3
"""The peers of issue 32's weak-neighbour check (docs/QUALITY.md, "Weak
neighbours").

On one set of features and noisy labels it computes what a user could run
instead of relabel, scored against the truth:

- vote: the K = 10 majority vote of the given labels on z-scored features
  (scikit-learn's exact NearestNeighbors, the point itself left out), as the
  data README's kNN column;
- cleanlab (kNN probs): cleanlab's find_label_issues on the out-of-sample
  vote fractions, flagged labels replaced by the vote, as the README's
  cleanlab column;
- cleanlab (logreg probs): find_label_issues on 5-fold cross-validated
  logistic-regression probabilities (scikit-learn LogisticRegression,
  defaults but max_iter 1000, z-scored features, StratifiedKFold shuffled
  with seed 0, as cleanlab's estimate_cv_predicted_probabilities), flagged
  labels replaced by the logreg argmax, as the README's logreg column;
  "logreg" alone is the cross-validated argmax itself.

cleanlab is not a Debian package and this project's machines reach no other
Python registry, so find_label_issues is written out below: cleanlab 2.x's
default filter_by="prune_by_noise_rate" with its calibrated confident joint,
step by step (compute_confident_joint, calibrate_confident_joint,
_keep_at_least_n_per_class, _prune_by_count, and "not an issue where the
model predicts the given label"). With cleanlab importable, --cleanlab uses
the library instead, to compare.

The features are raw little-endian float32, n x d row-major (the dev data's
features.f32, or what quality/grid's weak check writes); the labels raw
little-endian int32 in the same row order.

With --knn-only it stops after the kNN peers (the vote and cleanlab on kNN
probabilities): the peer cmd/relabel's BenchmarkSmallExact times as one
whole process.

Usage: peer_weak.py FEATURES.f32 D LABELS.i32 TRUTH.i32 [--cleanlab] [--knn-only]
Prints one JSON object of accuracies and seconds. Needs numpy and
scikit-learn (Debian: apt-get install -y python3-sklearn).
"""
import json
import sys
import time

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.neighbors import NearestNeighbors

K_VOTE = 10
FOLDS = 5


def round_preserving_sum(v):
    """cleanlab.internal.util.round_preserving_sum."""
    floats = np.asarray(v, dtype=float)
    ints = floats.round()
    orig = np.sum(floats).round()
    cur = np.sum(ints).round()
    while abs(cur - orig) > 1e-6:
        diff = np.round(orig - cur)
        inc = -1 if diff < 0 else 1
        changes = min(int(abs(diff)), len(v))
        for i in np.argsort(floats - ints)[::-1][:changes]:
            ints[i] += inc
        cur = np.sum(ints).round()
    return ints.astype(int)


def round_preserving_row_totals(m):
    return np.apply_along_axis(round_preserving_sum, 1, m).astype(int)


def confident_joint(labels, probs, k):
    """cleanlab.count.compute_confident_joint (calibrate=True): cj[given][true]."""
    counts = np.bincount(labels, minlength=k)
    thresholds = np.array([probs[labels == c, c].mean() for c in range(k)])
    conf = probs >= thresholds - 1e-6
    num = conf.sum(axis=1)
    guess = np.where(num > 1, probs.argmax(axis=1), conf.argmax(axis=1))
    keep = num > 0
    cj = np.zeros((k, k), dtype=np.int64)
    np.add.at(cj, (labels[keep], guess[keep]), 1)
    np.fill_diagonal(cj, cj.diagonal().clip(min=1))
    # calibrate_confident_joint: rows to the given labels' counts, then the
    # whole to n.
    cal = (cj.T / np.clip(cj.sum(axis=1), 1e-6, None) * counts).T
    cal = cal / np.clip(cal.sum(), 1e-6, None) * counts.sum()
    return round_preserving_row_totals(cal)


def keep_at_least_n_per_class(pcm, n=1):
    """cleanlab.filter._keep_at_least_n_per_class with frac_noise = 1."""
    diag = np.diagonal(pcm)
    new_diag = np.maximum(diag, n)
    diff = new_diag - diag
    per_col = np.maximum(np.count_nonzero(pcm, axis=0) - 1.0, 1.0)
    m = pcm - diff / per_col
    m[m < 0] = 0
    np.fill_diagonal(m, new_diag)
    m = m.astype(int)  # _reduce_prune_counts at frac_noise 1
    return round_preserving_row_totals(m).astype(int)


def find_label_issues(labels, probs):
    """cleanlab.filter.find_label_issues, filter_by="prune_by_noise_rate"."""
    k = probs.shape[1]
    counts = np.bincount(labels, minlength=k)
    pcm = keep_at_least_n_per_class(confident_joint(labels, probs, k).T)
    mask = np.zeros(len(labels), dtype=bool)
    for c in range(k):  # c: the given (noisy) label
        if counts[c] <= 1:
            continue
        lf = labels == c
        for j in range(k):  # j: the true label
            m = pcm[j][c]
            if j == c or m <= 0:
                continue
            margin = probs[:, j] - probs[:, c]
            cut = -np.partition(-margin[lf], m - 1)[m - 1]
            mask |= lf & (margin >= cut)
    mask[probs.argmax(axis=1) == labels] = False
    return mask


def cleanlab_issues(labels, probs, use_library):
    if use_library:
        from cleanlab.filter import find_label_issues as lib

        return lib(labels=labels, pred_probs=probs)
    return find_label_issues(labels, probs)


def main():
    args = [a for a in sys.argv[1:] if a not in ("--cleanlab", "--knn-only")]
    use_library = "--cleanlab" in sys.argv
    if len(args) != 4:
        sys.exit(__doc__)
    d = int(args[1])
    x = np.fromfile(args[0], dtype="<f4").reshape(-1, d).astype(np.float64)
    y = np.fromfile(args[2], dtype="<i4").astype(np.int64)
    truth = np.fromfile(args[3], dtype="<i4").astype(np.int64)
    n = x.shape[0]
    if len(y) != n or len(truth) != n:
        sys.exit(f"peer_weak: {n} feature rows, {len(y)} labels, {len(truth)} true labels")
    k = int(max(y.max(), truth.max())) + 1
    sd = x.std(axis=0)
    sd[sd == 0] = 1
    z = (x - x.mean(axis=0)) / sd
    out = {"rows": n, "d": d, "classes": k, "noisy": float((y == truth).mean())}

    t0 = time.time()
    _, nb = NearestNeighbors(n_neighbors=K_VOTE + 1).fit(z).kneighbors(z)
    votes = np.zeros((n, k))
    for j in range(1, K_VOTE + 1):
        np.add.at(votes, (np.arange(n), y[nb[:, j]]), 1.0)
    vote = votes.argmax(axis=1)
    probs = (votes + 1e-3) / (votes + 1e-3).sum(axis=1, keepdims=True)
    issues = cleanlab_issues(y, probs, use_library)
    out["vote"] = float((vote == truth).mean())
    out["cleanlab_knn"] = float((np.where(issues, vote, y) == truth).mean())
    out["knn_s"] = time.time() - t0
    if "--knn-only" in sys.argv:
        print(json.dumps(out))
        return

    t0 = time.time()
    probs = np.zeros((n, k))
    for tr, te in StratifiedKFold(n_splits=FOLDS, shuffle=True, random_state=0).split(z, y):
        m = LogisticRegression(max_iter=1000).fit(z[tr], y[tr])
        probs[np.ix_(te, m.classes_)] = m.predict_proba(z[te])
    arg = probs.argmax(axis=1)
    issues = cleanlab_issues(y, probs, use_library)
    out["logreg"] = float((arg == truth).mean())
    out["cleanlab_logreg"] = float((np.where(issues, arg, y) == truth).mean())
    out["flagged_logreg"] = int(issues.sum())
    out["logreg_s"] = time.time() - t0
    print(json.dumps(out))


if __name__ == "__main__":
    main()
