// Package lapacke is dplr's small cgo binding to the LAPACKE C interface and
// to OpenBLAS's thread controls, compiled only with the "openblas" build tag
// (without it the package is empty). Storage is column-major in caller-owned
// slices; a negative LAPACK info is an error, a positive one is returned.
package lapacke
