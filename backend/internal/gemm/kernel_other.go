//go:build !amd64

package gemm

// hasAsm is false: no assembly micro-kernel on this architecture.
const hasAsm = false

func kernelAsm(k int, a, b, c *float64, ldc int) { panic("gemm: no assembly kernel") }
