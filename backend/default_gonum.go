//go:build !openblas

package backend

// Default returns the backend this binary was built with: pure-Go gonum
// (build with -tags openblas for the OpenBLAS/LAPACKE backend).
func Default() Backend { return Gonum{} }

// SetThreads sets the number of threads the default backend may use and
// returns the number now in effect; the gonum backend ignores it (1).
func SetThreads(n int) int { return Gonum{}.Threads() }
