// Package gemm is the pure-Go backend's matrix-multiply engine: a packed,
// cache-blocked C += α·op(A)·op(B) (Gemm) and its symmetric rank-k twin
// (Syrk, upper triangle only), both built on one 6×8 register-tile
// micro-kernel.
//
// Operands are row-major strided slices, read either as stored or
// transposed, and are never written. The loops follow the usual
// five-loop blocking: a KC×NC panel of B is packed into NR-wide strips
// that stay in L1 one at a time, an MC×KC block of A into MR-high strips
// that stay in L2, and the micro-kernel accumulates an MR×NR tile of C in
// registers over the KC-long inner dimension. On amd64 with AVX2 and FMA
// the micro-kernel is Go assembly; elsewhere it is a generic Go loop.
//
// Large products are split over goroutines, up to runtime.GOMAXPROCS in
// total across all concurrent calls (helpers are taken only when idle), so
// calling from several goroutines at once does not oversubscribe the
// cores. Pack buffers are pooled.
package gemm
