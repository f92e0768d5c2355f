// Package lapacke is dplr's small cgo binding to the LAPACKE C interface and
// to OpenBLAS's thread controls. It is compiled only with the "openblas" build
// tag (it needs libopenblas-dev and liblapacke-dev); without the tag the
// package is empty.
//
// Every routine takes column-major storage (LAPACK_COL_MAJOR) in Go slices
// that the caller owns; slices are passed to C only for the duration of the
// call and hold no Go pointers, as the cgo pointer rules require. A negative
// info from LAPACK (an illegal argument) is reported as an error; a positive
// info is returned to the caller, whose meaning is routine-specific.
package lapacke
