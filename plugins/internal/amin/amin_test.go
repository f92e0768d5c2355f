package amin

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/privacy"
)

func TestSampleOrthonormalAndSpends(t *testing.T) {
	const p = 6
	c := mat.NewSymDense(p, nil)
	for i := 0; i < p; i++ {
		c.SetSym(i, i, float64(p-i))
	}
	for _, r := range []int{1, 3, p} {
		var spent []int
		u, diag, err := Sample(context.Background(), privacy.NewSeededSource(1), c, Config{
			Rank:    r,
			Declare: func(k int) (Exponential, error) { spent = append(spent, k); return fixedBeta(2), nil },
		})
		require.NoError(t, err)
		assert.Len(t, spent, Draws(r, p), "rank %d", r)
		assert.Equal(t, p, diag.Dim)
		var utu mat.Dense
		utu.Mul(u.T(), u)
		for i := 0; i < r; i++ {
			for j := 0; j < r; j++ {
				want := 0.0
				if i == j {
					want = 1
				}
				assert.InDelta(t, want, utu.At(i, j), 1e-12)
			}
		}
	}
	assert.Equal(t, p-1, Draws(p, p))
	assert.Equal(t, 2, Draws(2, p))
	_, _, err := Sample(context.Background(), privacy.NewSeededSource(1), c, Config{Rank: p + 1})
	assert.Error(t, err)
}

// With a huge inverse temperature the draws are the top eigenvectors, in
// order.
func TestSampleConcentrates(t *testing.T) {
	c := mat.NewSymDense(4, []float64{4, 0, 0, 0, 0, 3, 0, 0, 0, 0, 2, 0, 0, 0, 0, 1})
	u, _, err := Sample(context.Background(), privacy.NewSeededSource(2), c, Config{
		Rank: 2, Declare: func(int) (Exponential, error) { return fixedBeta(1e7), nil },
	})
	require.NoError(t, err)
	assert.InDelta(t, 1, u.At(0, 0)*u.At(0, 0), 1e-5)
	assert.InDelta(t, 1, u.At(1, 1)*u.At(1, 1), 1e-5)
}

// fixedBeta is a test release with a fixed inverse temperature.
type fixedBeta float64

func (b fixedBeta) Sample(f func(float64) error) error { return f(float64(b)) }
