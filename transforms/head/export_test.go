package head

// The external tests' (engine_test.go: they import options, which imports
// head) view of the internal test helpers.
var (
	TestParams = testParams
	LinearSet  = linearSet
	Accuracy   = accuracy
)
