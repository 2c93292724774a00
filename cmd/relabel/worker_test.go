package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkerBadFlags: `relabel worker` refuses a bad --listen or --work-dir
// with exit status 2 and a message naming the flag, before listening.
func TestWorkerBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--listen", "no-port"}, "--listen"},
		{[]string{"--listen", "localhost:50000", "--work-dir", filepath.Join(t.TempDir(), "missing")}, "--work-dir"},
		{[]string{"--bogus"}, "-bogus"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		var out, errb bytes.Buffer
		code := dispatch(context.Background(), append([]string{"worker"}, c.args...), &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), c.flag) {
			t.Errorf("relabel worker %q: exit %d, stderr %q; want 2 naming %s", c.args, code, errb.String(), c.flag)
		}
		if out.Len() != 0 {
			t.Errorf("relabel worker %q printed %q: it must not serve", c.args, out.String())
		}
	}
}
