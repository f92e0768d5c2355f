//go:build openblas

package backend

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend/internal/lapacke"
)

func TestThreadsFor(t *testing.T) {
	for _, tc := range []struct {
		work float64
		free int
		want int
	}{
		{0, 8, 1},
		{1e8, 8, 1},        // below one thread's worth
		{9 * 1e9, 2, 2},    // dsyevd at p = 1000 on two idle cores
		{9 * 1e9, 1, 1},    // a loaded machine: one thread
		{5e8, 8, 2},        // two threads' worth
		{9 * 1e9, 0, 1},    // never below one
		{9 * 1e12, 64, 64}, // at most the free cores
	} {
		assert.Equal(t, tc.want, threadsFor(tc.work, tc.free), "work %g free %d", tc.work, tc.free)
	}
}

// A process starts OpenBLAS on one thread unless the user chose a count,
// and a threaded call restores the count it found.
func TestOneThreadByDefault(t *testing.T) {
	if userThreads {
		t.Skip("OPENBLAS_NUM_THREADS is set")
	}
	assert.Equal(t, 1, OpenBLAS{}.Threads())
	threaded(1e12, func() {})
	assert.Equal(t, 1, OpenBLAS{}.Threads())
	assert.GreaterOrEqual(t, freeCores(), 1)
}

// A count read while a large call has raised it waits for the call to
// restore it: a caller that saves and restores the count (the kernel's
// second moment) never saves the raised one.
func TestThreadsWaitsForRaisedCall(t *testing.T) {
	if userThreads || threadsFor(1e12, freeCores()) < 2 {
		t.Skip("no idle core to raise the count with")
	}
	inside, release := make(chan int), make(chan struct{})
	go threaded(1e12, func() { inside <- lapacke.Threads(); <-release })
	if n := <-inside; n < 2 {
		close(release)
		t.Skip("the load rose between the check and the call: the call ran on one thread")
	}
	read := make(chan int)
	go func() { read <- OpenBLAS{}.Threads() }()
	close(release)
	assert.Equal(t, 1, <-read)
}

// The free cores follow the busier of the lagging load average and the
// entities runnable now, so busy processes that just started count at once.
func TestFreeCoresFrom(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cpus    int
		loadavg string
		want    int
	}{
		{"idle", 2, "0.00 0.01 0.05 1/99 123", 2},
		{"this process only", 2, "1.00 1.00 1.00 1/99 123", 2},
		{"one other by the load average", 2, "2.10 1.00 1.00 1/99 123", 1},
		{"six spinners just started", 2, "0.40 0.20 0.10 7/105 123", 1},
		{"eight cores, three others running", 8, "0.50 0.50 0.50 4/300 123", 5},
		{"busy beyond the cores", 4, "12.0 9.0 5.0 13/300 123", 1},
		{"malformed", 4, "garbage", 1},
		{"no running field", 4, "0.1 0.1 0.1", 1},
	} {
		assert.Equal(t, tc.want, freeCoresFrom(tc.cpus, tc.loadavg), tc.name)
	}
}

// poolAtStart is whether OpenBLAS's worker threads ran once the package
// had initialised (this file's init runs after threads_openblas.go's).
var poolAtStart, hasPool bool

func init() { poolAtStart, hasPool = lapacke.Pool() }

// The worker threads OpenBLAS starts when it loads are stopped by the
// package's init; a call with a raised count starts them again and gives
// the product one thread gives.
func TestPoolStoppedAtStart(t *testing.T) {
	if userThreads || !hasPool {
		t.Skip("OPENBLAS_NUM_THREADS is set, or OpenBLAS has no thread pool")
	}
	assert.False(t, poolAtStart)
	a := mat.NewDense(300, 300, nil)
	for i := range 300 {
		for j := range 300 {
			a.Set(i, j, float64((i*7+j*13)%17)-8)
		}
	}
	var one, two mat.Dense
	one.Mul(a, a)
	lapacke.SetThreads(2)
	two.Mul(a, a)
	lapacke.SetThreads(1)
	assert.True(t, mat.Equal(&one, &two))
	running, _ := lapacke.Pool()
	assert.True(t, running, "a threaded call starts the pool again")
	lapacke.StopPool()
	running, _ = lapacke.Pool()
	assert.False(t, running)
}
