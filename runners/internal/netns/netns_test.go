package netns

import (
	"net"
	"os"
	"testing"
	"time"
)

// TestMain runs the tests inside the private namespace, as runnertest does.
func TestMain(m *testing.M) {
	if !Inside() {
		code, err := Reexec()
		if err != nil {
			// The isolated tests below fail and say why.
			reexecErr = err
			os.Exit(m.Run())
		}
		os.Exit(code)
	}
	reexecErr = LoopbackUp()
	os.Exit(m.Run())
}

var reexecErr error

func TestIsolated(t *testing.T) {
	if reexecErr != nil {
		t.Fatalf("not isolated: %v", reexecErr)
	}
	if !Inside() {
		t.Fatalf("Inside() = false in the re-executed copy")
	}
	only, err := OnlyLoopback()
	if err != nil || !only {
		t.Fatalf("OnlyLoopback() = %v, %v; want true", only, err)
	}
}

// TestLoopbackReachable checks a server on all interfaces (as Prism listens)
// is reachable on 127.0.0.1 once LoopbackUp ran, and only there.
func TestLoopbackReachable(t *testing.T) {
	if reexecErr != nil {
		t.Fatalf("not isolated: %v", reexecErr)
	}
	lis, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer lis.Close()
	go func() {
		if c, err := lis.Accept(); err == nil {
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(lis.Addr().String())
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", port), 2*time.Second)
	if err != nil {
		t.Fatalf("dial 127.0.0.1:%s: %v", port, err)
	}
	c.Close()
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if ip, _, _ := net.ParseCIDR(a.String()); ip != nil && !ip.IsLoopback() {
				t.Errorf("interface %s has non-loopback address %v", i.Name, ip)
			}
		}
	}
}
