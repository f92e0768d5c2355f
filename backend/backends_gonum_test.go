//go:build !openblas

package backend

// backendsUnderTest lists the implementations compiled into this build.
func backendsUnderTest() []Backend { return []Backend{Gonum{}} }

// pureBLAS makes be's benchmarks run on the BLAS it ships with; in this
// build every backend already does.
func pureBLAS(Backend) (restore func()) { return func() {} }
