//go:build openblas && cgo

package knn_test

const blasWant = "OpenBLAS via gonum.org/v1/netlib"
