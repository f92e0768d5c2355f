//go:build openblas

package backend

// backendsUnderTest lists the implementations compiled into this build.
func backendsUnderTest() []Backend { return []Backend{Gonum{}, OpenBLAS{}} }
