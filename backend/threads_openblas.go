//go:build openblas

package backend

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/dplr/dplr/backend/internal/lapacke"
)

// OpenBLAS threads: one unless OPENBLAS_NUM_THREADS is set, more only for a
// single large LAPACK call on an idle machine (docs/benchmarks.md).

// threadWork is the work (flops) per thread below which another thread is
// not worth starting.
const threadWork = 2e8

// userThreads reports whether the user chose the thread count.
var userThreads = os.Getenv("OPENBLAS_NUM_THREADS") != ""

func init() {
	if !userThreads {
		lapacke.SetThreads(1)
	}
}

// threadMu serialises the calls that raise the thread count with every
// read and change of it through OpenBLAS.Threads and SetThreads.
var threadMu sync.Mutex

// threaded runs f, a single LAPACK call of about work flops, with OpenBLAS
// allowed threadsFor(work, freeCores()) threads, and restores the count.
// With a user-chosen count it runs f as it is.
func threaded(work float64, f func()) {
	if userThreads {
		f()
		return
	}
	n := threadsFor(work, freeCores())
	if n <= 1 {
		f()
		return
	}
	threadMu.Lock()
	defer threadMu.Unlock()
	prev := lapacke.Threads()
	lapacke.SetThreads(n)
	defer lapacke.SetThreads(prev)
	f()
}

// threadsFor is the thread count for a call of work flops with free idle
// cores: one per threadWork of work, at most free, at least one.
func threadsFor(work float64, free int) int {
	n := int(work / threadWork)
	return max(1, min(n, free))
}

// freeCores estimates the idle cores: the processor count less the
// one-minute load average (which counts this process's own running
// thread, hence the +1), at least one. Without /proc/loadavg every core
// counts as free.
func freeCores() int {
	cpus := runtime.NumCPU()
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return cpus
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return cpus
	}
	load, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return cpus
	}
	return max(1, min(cpus, cpus-int(load+0.5)+1))
}
