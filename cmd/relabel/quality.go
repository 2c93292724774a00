package main

import (
	"context"
	"io"
)

func noiseCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return usageError{errNotYet}
}

func evalCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return usageError{errNotYet}
}

var errNotYet = io.ErrUnexpectedEOF
