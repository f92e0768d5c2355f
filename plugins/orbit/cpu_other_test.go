//go:build !unix

package orbit

// processCPU is unavailable here; benchmarks then report 0 CPU time.
func processCPU() float64 { return 0 }
