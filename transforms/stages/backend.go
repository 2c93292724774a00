package stages

import "github.com/relabel/relabel/transforms/llc"

// llcCoder is the LLC backend the stages use.
func llcCoder() llc.Coder { return llc.CPU{} }
