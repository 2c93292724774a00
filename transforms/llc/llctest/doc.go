// Package llctest is the conformance suite every llc.Coder runs, in the manner
// of gonum's blas/testblas: `func TestCPU(t *testing.T) { llctest.Run(t, llc.CPU{}) }`.
//
// It builds its own float64 oracle from the definition in llc.Params (Gram of
// the centred neighbours, locality adaptor, ridge relative to the trace) and
// shares no code with any Coder, so a backend cannot pass by repeating a bug.
package llctest
