// Package evaluate measures cleaned labels against ground truth, as the
// command `relabel eval` reports them: accuracy of the given and of
// the cleaned labels, how well `changed` detects the truly wrong given labels
// (precision, recall, F1), how well given_label_prob ranks them (ROC AUC), and
// how calibrated clean_prob is (expected calibration error). It also computes
// the baselines any cleaner must beat on the same data: the given labels
// themselves, their majority vote when items have several annotations, and a
// K-nearest-neighbour majority vote on the features (exact, pure Go). The
// package is pure Go; Arrow I/O is the caller's.
package evaluate
