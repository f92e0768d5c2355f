//go:build openblas

package backend

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
