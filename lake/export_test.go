package lake

// SetMaxRewriteRows sets the rows of an output file an incremental table
// run rewrites whole (maxRewriteRows) for a test, and returns the undo.
func SetMaxRewriteRows(n int) func() {
	old := maxRewriteRows
	maxRewriteRows = n
	return func() { maxRewriteRows = old }
}

// LauncherFits is how many ivf partitionings the launcher has fitted
// (launcherFits).
func LauncherFits() int64 { return launcherFits.Load() }
