// Package reportio reads a finished relabel output directory (summary.json and
// the output shards it names) and writes report.html: one self-contained page
// (inline CSS, SVG and a few lines of JavaScript; no network, so it works from
// a bucket or as an email attachment) with the run, a per-class table, the
// estimated transition matrix as a labelled heatmap, the most confused class
// pairs, a histogram of given_label_prob and the likeliest wrong labels. With
// the true labels (relabel eval) it adds accuracy, a reliability diagram of
// clean_prob and detection precision/recall by threshold. After an
// annotator-aware run it adds the annotators: how many, how many flagged as
// spammers or adversaries, and a table of the flagged ones and of those who
// gave the most labels.
//
// The shards are read in one streaming pass, one unit (row group or record
// batch) at a time through io/resultio's Scan (the output contract's one
// reader, with shardio's guards and label decoding), into
// fixed-size accumulators (fixed histogram bins, a bounded heap of suspects),
// so the report of a 10M-row output costs one read of it and memory that
// grows with the number of classes, not rows. The annotators file is read
// likewise, into bounded heaps of the rows the table shows.
package reportio
