#!/usr/bin/python3
"""Refits mixture.AutoTemperature's coefficients (docs/QUALITY.md, calibration).

Dump the raw final states of every dev-grid cell, then fit:

    mkdir -p /tmp/caldump
    RELABEL_CALDUMP=/tmp/caldump scripts/quality.sh -quality-out /tmp/QUALITY.md
    /usr/bin/python3 scripts/fit_temperature.py /tmp/caldump

Each dump line is: truth, given label, then per kept class "class:pi:rho(given):rho(class)".
The fit picks T = a + b * share + c * mass (share: labelled rows whose top class is not the
given label; mass: mean pi of the given label over those rows) minimising the worst cell's
expected calibration error (15 bins), over a grid of (a, b, c); then refits with each
dataset left out and reports the held-out cells' ECE. Needs numpy (Debian python3-numpy).
"""
import glob, itertools, os, sys
import numpy as np


def load(path):
    truth, given, top, pis, pg = [], [], [], [], []
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        t, g = int(f[0]), int(f[1])
        ents = sorted(((int(c), float(p)) for c, p, _, _ in (e.split(":") for e in f[2:])), key=lambda x: -x[1])
        truth.append(t); given.append(g)
        top.append(ents[0][0] if ents else -1)
        pis.append([p for _, p in ents])
        pg.append(sum(p for c, p in ents if c == g))
    k = max(len(p) for p in pis)
    pi = np.zeros((len(pis), k))
    for i, p in enumerate(pis):
        pi[i, : len(p)] = p
    return np.array(truth), np.array(given), np.array(top), pi, np.array(pg)


def ece(p, correct, bins=15):
    idx = np.minimum((p * bins).astype(int), bins - 1)
    return sum(abs(p[idx == b].mean() - correct[idx == b].mean()) * (idx == b).sum() for b in range(bins) if (idx == b).any()) / len(p)


def top_prob(pi, t):
    q = np.where(pi > 0, pi ** (1 / t), 0)
    z = q.sum(1)
    z[z == 0] = 1
    return q[:, 0] / z


def main(d):
    ts = np.round(np.arange(0.05, 1.0005, 0.005), 3)
    cells = {}
    for f in sorted(glob.glob(os.path.join(d, "*.tsv"))):
        name = os.path.basename(f)[:-4]
        if "annotators" in name:
            continue  # several labels per row: the majority is rarely changed; checked on the grid
        truth, given, top, pi, pg = load(f)
        empty = top < 0
        top = np.where(empty, given, top)
        correct = (top == truth).astype(float)
        lab = (given >= 0) & ~empty
        chg = lab & (top != given)
        stats = (chg.sum() / max(lab.sum(), 1), pg[chg].mean() if chg.any() else 0.0)
        curve = np.array([ece(np.where(empty, 0, top_prob(pi, t)), correct) for t in ts])
        cells[name] = (stats, curve)

    def look(n, t):
        return cells[n][1][int(round((min(max(t, 0.1), 1.0) - 0.05) / 0.005))]

    grid = list(itertools.product(np.arange(0.4, 1.0, 0.01), np.arange(-1.2, 0.01, 0.05), np.arange(-1.5, 0.01, 0.05)))

    def fit(names):
        return min(grid, key=lambda p: max(look(n, p[0] + p[1] * cells[n][0][0] + p[2] * cells[n][0][1]) for n in names))

    names = sorted(cells)
    p = fit(names)
    print("fitted on every cell: T = %.2f %+.2f share %+.2f mass" % p)
    for n in names:
        t = p[0] + p[1] * cells[n][0][0] + p[2] * cells[n][0][1]
        print("  %-36s share %.3f mass %.3f  T %.3f  ECE %.4f (T=.25: %.4f)" % (n, *cells[n][0], t, look(n, t), look(n, 0.25)))
    held = []
    for ds in sorted({n.split("__")[0] for n in names}):
        q = fit([n for n in names if not n.startswith(ds + "__")])
        for n in names:
            if n.startswith(ds + "__"):
                held.append((look(n, q[0] + q[1] * cells[n][0][0] + q[2] * cells[n][0][1]), n))
    print("each dataset held out: worst ECE %.4f (%s), mean %.4f" % (max(held)[0], max(held)[1], np.mean([e for e, _ in held])))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/caldump")
