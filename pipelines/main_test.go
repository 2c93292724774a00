package pipelines_test

import (
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

// TestMain parses flags and initializes Beam (ptest.Main) so that the tests of
// this package can run pipelines on Prism, in-process.
func TestMain(m *testing.M) { ptest.Main(m) }
