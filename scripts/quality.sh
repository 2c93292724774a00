#!/bin/sh
# Runs relabel's quality benchmark (issue 4): relabel with its defaults
# (pipelines.Defaults) over every cell of the dev grid in ../shared/data,
# scored against the truth and the baselines, and rewrites the generated
# section of docs/QUALITY.md. Extra arguments go to the test binary, e.g.
#   scripts/quality.sh -without fashion_mnist_pca50     # the quick look
#   scripts/quality.sh -data /path/to/data              # another data folder
# The grid includes issue 32's high-noise cells (sym-0.6, pair-0.45); its
# experiments run with
#   go test ./quality/grid -run TestExplore -explore pooled10/50/0 -v
#   go test ./quality/grid -run TestExplore -explore pooled10/30/0/50split \
#       -explore.without none -explore.only /pair- -v   # the gated split start
# and issue 32's weak-neighbour check and linear head (docs/QUALITY.md, "Weak
# neighbours"; the check needs python3-sklearn; the head is the default, --head
# fit, so headoff is the variant without it) with
#   go test ./quality/grid -run TestWeak -weak -weak.variants headoff -v
#   go test ./quality/grid -run TestHeadGrid -head headoff -head.without none -v
set -eu
cd "$(dirname "$0")/.."
exec go test ./quality/grid -quality -run '^TestQuality$' -timeout 4h -v "$@"
