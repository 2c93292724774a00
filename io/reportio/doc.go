// Package reportio reads a finished relabel output directory (summary.json and
// the output shards it names) and writes report.html: one self-contained page
// (inline CSS, SVG and a few lines of JavaScript; no network, so it works from
// a bucket or as an email attachment) with the run, a per-class table, the
// estimated transition matrix as a labelled heatmap, the most confused class
// pairs, a histogram of given_label_prob and the likeliest wrong labels. With
// the true labels (relabel eval) it adds accuracy, a reliability diagram of
// clean_prob and detection precision/recall by threshold.
//
// The shards are read in one streaming pass, one record batch at a time, into
// fixed-size accumulators (fixed histogram bins, a bounded heap of suspects),
// so the report of a 10M-row output costs one read of it and memory that
// grows with the number of classes, not rows.
package reportio
