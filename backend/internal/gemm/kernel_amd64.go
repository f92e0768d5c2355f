package gemm

import "golang.org/x/sys/cpu"

// hasAsm reports whether the assembly micro-kernel can run here.
var hasAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// kernelAsm is the AVX2/FMA micro-kernel: the mr×nr tile at c (row stride
// ldc) gains Σ_l a[l·mr+i]·b[l·nr+j] over k packed steps. a and b must
// hold k·mr and k·nr values.
//
//go:noescape
func kernelAsm(k int, a, b, c *float64, ldc int)
