// Package openblas holds knn's cgo calls into OpenBLAS itself (thread count,
// build configuration), kept out of package knn because a package that uses
// cgo cannot also hold Go assembly. It is empty unless built with
// -tags openblas and cgo enabled.
package openblas
