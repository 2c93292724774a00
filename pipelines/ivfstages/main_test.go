package ivfstages

import (
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

// TestMain initialises Beam (ptest.Main) so that this package's pipeline
// tests run on the embedded runner, in-process.
func TestMain(m *testing.M) { ptest.Main(m) }
