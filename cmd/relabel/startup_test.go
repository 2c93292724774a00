package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// TestStartupInit: no package's initialisation in relabel's binary allocates
// more than a few MiB. Upstream iceberg-go parses every Substrait extension
// YAML in table/substrait's init (33 MB and about 165 ms in each process,
// reading a table or not); the copy in third_party/iceberg-go loads them on
// first use.
func TestStartupInit(t *testing.T) {
	cmd := exec.Command(relabelBin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("relabel version: %v\n%s", err, out)
	}
	const limit = 4 << 20
	inits := regexp.MustCompile(`(?m)^init (\S+) @[^,]+, [^,]+ clock, (\d+) bytes`).FindAllSubmatch(out, -1)
	if len(inits) < 10 {
		t.Fatalf("GODEBUG=inittrace=1 gave %d init lines:\n%s", len(inits), out)
	}
	for _, m := range inits {
		if b, _ := strconv.ParseInt(string(m[2]), 10, 64); b > limit {
			t.Errorf("package %s allocates %d bytes at initialisation (limit %d)", m[1], b, limit)
		}
	}
}
