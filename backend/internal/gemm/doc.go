// Package gemm is the pure-Go backend's matrix-multiply engine: a packed,
// cache-blocked C += α·op(A)·op(B) (Gemm) and its symmetric rank-k twin
// (Syrk, upper triangle only) on one 6×8 register-tile micro-kernel, split
// over at most GOMAXPROCS goroutines in total; the blocking is described in
// docs/benchmarks.md ("Inside backend").
package gemm
