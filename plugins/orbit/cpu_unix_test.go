//go:build unix

package orbit

import "syscall"

// processCPU returns the process's user+system CPU time in seconds, so that
// benchmarks can report CPU time per op, which a loaded shared machine
// distorts far less than wall time.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}
