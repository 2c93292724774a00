// Package release holds the checks of relabel's release configuration
// (.goreleaser.yaml at the repository root), run by CI in place of a
// goreleaser snapshot build: installing goreleaser from source and
// cross-compiling four targets cold would cost CI far more than its budget
// allows on two cores. The test checks what a snapshot build would find
// wrong first: the file's shape, its main package, and that every target's
// packages resolve for that platform (a dependency without a build for it).
package release
