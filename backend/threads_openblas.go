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
// single large LAPACK call on an idle machine (docs/benchmarks.md). The
// worker threads OpenBLAS starts when it loads are stopped at once: idle,
// they would spin on a core for about 0.1 s while the process starts; a
// raised call starts them again.

// threadWork is the work (flops) per thread below which another thread is
// not worth starting.
const threadWork = 2e8

// userThreads reports whether the user chose the thread count.
var userThreads = os.Getenv("OPENBLAS_NUM_THREADS") != ""

func init() {
	if !userThreads {
		lapacke.SetThreads(1)
		lapacke.StopPool()
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

// freeCores estimates the idle cores from /proc/loadavg (freeCoresFrom).
// Without it (a sandbox that hides it) no core counts as free: threads
// that spin beside busy processes cost far more than they save.
func freeCores() int {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 1
	}
	return freeCoresFrom(runtime.NumCPU(), string(b))
}

// freeCoresFrom is the processor count less the busier of two readings of
// the other work, at least one: the one-minute load average less this
// process's own running thread, which lags a minute behind processes that
// just started, and the entities runnable right now (the fourth field's
// numerator) less this one. An unreadable line leaves one core.
func freeCoresFrom(cpus int, loadavg string) int {
	f := strings.Fields(loadavg)
	if len(f) < 4 {
		return 1
	}
	load, err := strconv.ParseFloat(f[0], 64)
	running, _, ok := strings.Cut(f[3], "/")
	r, err2 := strconv.Atoi(running)
	if err != nil || err2 != nil || !ok {
		return 1
	}
	others := max(load-1, float64(r-1))
	return max(1, min(cpus, cpus-int(others+0.5)))
}
