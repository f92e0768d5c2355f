//go:build !openblas

package backend

// Default returns the backend this binary was built with: pure-Go gonum
// (build with -tags openblas for the OpenBLAS/LAPACKE backend).
func Default() Backend { return Gonum{} }
