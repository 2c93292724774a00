// Package archcheck holds the repository's layering checks: tests that ask
// `go list` for each package's dependencies and fail when a package reaches
// across a layer (math, the lake or the resolved job pulling in Beam). They
// read the module's import graph only, so they build and run in seconds.
package archcheck
