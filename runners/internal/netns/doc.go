// Package netns runs a test binary again inside a private network namespace
// whose only interface is loopback. Beam's standalone Prism job server (and the
// in-process one) listens on all interfaces with no flag to narrow it; inside
// such a namespace "all interfaces" is 127.0.0.1 alone, so nothing outside the
// test can reach the job server. Linux only (root, or unprivileged user
// namespaces); elsewhere Reexec reports why it cannot.
package netns
