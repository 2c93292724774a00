// Package prism serves relabel's copy of Beam's Prism runner (the job
// service and the workers' Fn API, one gRPC server) on 127.0.0.1, for the
// embedded runner of `relabel run`. Beam's own in-process Prism listens on
// every network interface and has no way to say otherwise; its packages are
// internal to Beam, so internal/ is a copy of them at the Beam version in
// go.mod (scripts/prism-fork.sh), with the patches README.md lists.
package prism

import (
	"fmt"
	"net"

	"github.com/relabel/relabel/runners/internal/prism/internal"
	"github.com/relabel/relabel/runners/internal/prism/internal/jobservices"
)

// Server is a Prism job server on loopback.
type Server struct {
	s *jobservices.Server
}

// Start serves a Prism job server on 127.0.0.1, on a port the kernel picks.
// Close it when the job is done.
func Start() (*Server, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("prism: listening on 127.0.0.1: %w", err)
	}
	s := jobservices.NewServerOn(lis, internal.RunPipeline)
	go s.Serve()
	return &Server{s: s}, nil
}

// Endpoint is the job service's address, 127.0.0.1:PORT.
func (s *Server) Endpoint() string { return s.s.Endpoint() }

// Close stops the server at once and frees its port.
func (s *Server) Close() { s.s.Close() }
