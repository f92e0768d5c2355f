package gram

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/plugins/internal/clip"
)

func randRows(n, p int, sd float64, seed uint64) *mat.Dense {
	rng := rand.New(rand.NewPCG(seed, 1))
	x := mat.NewDense(n, p, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < p; j++ {
			x.Set(i, j, sd*rng.NormFloat64()+0.5)
		}
	}
	return x
}

// maxRelDiff is max |a−b| over the entries, relative to max |a|.
func maxRelDiff(a, b *mat.SymDense) float64 {
	p := a.SymmetricDim()
	var d, m float64
	for i := 0; i < p; i++ {
		for j := i; j < p; j++ {
			d = math.Max(d, math.Abs(a.At(i, j)-b.At(i, j)))
			m = math.Max(m, math.Abs(a.At(i, j)))
		}
	}
	return d / m
}

// TestSplitMatchesClip: the split product equals the reference
// clip.SecondMoment (to the rounding of a different summation order),
// counts the same clipped rows for every block size (one row, a divisor of
// a chunk, a block with a remainder, more than a chunk) and centring or
// clipping choice, and restores the thread count it changed.
func TestSplitMatchesClip(t *testing.T) {
	x := randRows(301, 7, 2, 1)
	mu := []float64{1, 0, -1, 0, 2, 0, 0.5}
	cases := []struct {
		name   string
		mu     []float64
		c      float64
		scale  float64
		doClip bool
	}{
		{"centred", mu, 0, 1.0 / 301, false},
		{"clipped", nil, 4, 1.0 / 301, true},
		{"centred and clipped", mu, 4, 1.0 / 16, true},
		{"clip above every row", mu, 1e6, 1, true},
	}
	be := backend.Gonum{}
	for _, c := range cases {
		want, wantN, err := clip.SecondMoment(context.Background(), be, x, c.mu, c.c, c.scale)
		require.NoError(t, err)
		for _, bs := range []int{1, 5, 43, 100} {
			var set []int
			got, gotN, err := split(context.Background(), func(n int) { set = append(set, n) }, 3, x, c.mu, c.c, c.scale, c.doClip, bs)
			require.NoError(t, err, "%s, blocks of %d", c.name, bs)
			assert.Equal(t, wantN, gotN, "%s, blocks of %d", c.name, bs)
			assert.Less(t, maxRelDiff(want, got), 1e-13, "%s, blocks of %d", c.name, bs)
			assert.Equal(t, []int{1, 3}, set)
		}
	}
}

// TestSplitDeterministic: repeated runs give bit-identical results.
func TestSplitDeterministic(t *testing.T) {
	x := randRows(500, 9, 1, 2)
	mu := make([]float64, 9)
	first, _, err := split(context.Background(), func(int) {}, 2, x, mu, 2, 0.01, true, 17)
	require.NoError(t, err)
	for range 5 {
		again, _, err := split(context.Background(), func(int) {}, 2, x, mu, 2, 0.01, true, 17)
		require.NoError(t, err)
		assert.Equal(t, first.RawSymmetric().Data, again.RawSymmetric().Data)
	}
}

// TestSplitCancelled: a cancelled context stops the product with the
// context's error.
func TestSplitCancelled(t *testing.T) {
	x := randRows(200, 5, 1, 3)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := split(ctx, func(int) {}, 2, x, nil, 1, 1, true, 10)
	require.ErrorIs(t, err, context.Canceled)
}

// TestSecondMomentDelegates: the exported function gives the reference
// result on every path (small products, single-threaded backends and no
// copy are clip.SecondMoment itself) and refuses a mean of the wrong
// length on the split path.
func TestSecondMomentDelegates(t *testing.T) {
	x := randRows(120, 6, 2, 4)
	mu := []float64{0, 1, 0, 1, 0, 1}
	be := backend.Default()
	for _, c := range []float64{0, 3} {
		want, wantN, err := clip.SecondMoment(context.Background(), be, x, mu, c, 0.5)
		require.NoError(t, err)
		got, gotN, err := SecondMoment(context.Background(), be, x, mu, c, 0.5)
		require.NoError(t, err)
		assert.Equal(t, wantN, gotN)
		assert.Less(t, maxRelDiff(want, got), 1e-13)
	}
	if _, ok := be.(threadSetter); ok && be.Threads() > 1 {
		big := randRows(3000, 140, 1, 5)
		threads := be.Threads()
		want, wantN, err := clip.SecondMoment(context.Background(), be, big, nil, 9, 1)
		require.NoError(t, err)
		got, gotN, err := SecondMoment(context.Background(), be, big, nil, 9, 1)
		require.NoError(t, err)
		assert.Equal(t, wantN, gotN)
		assert.Less(t, maxRelDiff(want, got), 1e-13)
		assert.Equal(t, threads, be.Threads(), "thread count restored")
		_, _, err = SecondMoment(context.Background(), be, big, []float64{1}, 1, 1)
		require.Error(t, err)
	}
}
