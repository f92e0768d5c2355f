// Package alloctest measures heap allocation for tests that assert a hot
// loop allocates nothing that grows with the data (n samples, n users).
package alloctest

import "runtime"

// HeapBytes returns the bytes allocated on the heap while f runs. It reads
// the process-wide counter, so it is exact only when nothing else allocates
// meanwhile: call it from tests that do not run in parallel.
func HeapBytes(f func()) float64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return float64(b.TotalAlloc - a.TotalAlloc)
}
