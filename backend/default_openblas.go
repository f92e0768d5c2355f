//go:build openblas

package backend

// Default returns the backend this binary was built with: OpenBLAS/LAPACKE.
func Default() Backend { return OpenBLAS{} }

// SetThreads sets the number of threads the default backend may use (at
// least 1) and returns the number now in effect.
func SetThreads(n int) int {
	OpenBLAS{}.SetThreads(n)
	return OpenBLAS{}.Threads()
}
