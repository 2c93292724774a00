package runnertest_test

import (
	"net"
	"os"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core"

	"github.com/relabel/relabel/runners/runnertest"
)

func TestMain(m *testing.M) { runnertest.Main(m) }

// TestStartPrism checks the job server answers the Job API at the returned
// endpoint, and that the test runs where only loopback exists.
func TestStartPrism(t *testing.T) {
	endpoint := runnertest.StartPrism(t)
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil || host != "localhost" || port == "" || port == "0" {
		t.Fatalf("StartPrism() = %q, want localhost:PORT", endpoint)
	}
	if jobs := runnertest.Jobs(t, endpoint); len(jobs) != 0 {
		t.Errorf("a fresh job server lists jobs %v", jobs)
	}
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback == 0 {
			t.Errorf("interface %s is not loopback: the job server would be reachable through it", i.Name)
		}
	}
	// Two servers at once get different ports.
	if other := runnertest.StartPrism(t); other == endpoint {
		t.Errorf("a second StartPrism returned the same endpoint %s", other)
	}
}

// TestPrismBinaryCached checks the built job server is kept and reused.
func TestPrismBinaryCached(t *testing.T) {
	a := runnertest.PrismBinary(t)
	st, err := os.Stat(a)
	if err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("PrismBinary() = %s: stat %v, mode %v; want an executable", a, err, st.Mode())
	}
	if !strings.Contains(a, "prism-"+core.SdkVersion+"-") {
		t.Errorf("PrismBinary() = %s, want a name keyed by the Beam version %s", a, core.SdkVersion)
	}
	if b := runnertest.PrismBinary(t); b != a {
		t.Errorf("PrismBinary() = %s then %s", a, b)
	}
}
