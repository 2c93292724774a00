package llc_test

import (
	"testing"

	"github.com/relabel/relabel/transforms/llc"
	"github.com/relabel/relabel/transforms/llc/llctest"
)

func TestCPU(t *testing.T) { llctest.Run(t, llc.CPU{}) }
