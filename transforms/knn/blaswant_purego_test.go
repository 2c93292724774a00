//go:build !openblas || !cgo

package knn_test

const blasWant = "pure Go ("
