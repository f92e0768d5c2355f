package rowsrc

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/plugins/internal/clip"
)

// TestLocalAndRemoteAgree: the two sources give the same counts exactly
// and the same sums and second moments up to summation order.
func TestLocalAndRemoteAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	x := mat.NewDense(500, 7, nil)
	for i := 0; i < 500; i++ {
		for j := 0; j < 7; j++ {
			x.Set(i, j, r.NormFloat64()*float64(1+i%4))
		}
	}
	ds := &data.Dataset{Kind: data.Rows, X: x}
	loc, err := Of(ds)
	require.NoError(t, err)
	rem, err := Of(pass.RemoteOf(ds, nil))
	require.NoError(t, err)
	assert.NotNil(t, loc.Rows())
	assert.Nil(t, rem.Rows())
	ctx := context.Background()
	grid, err := clip.DefaultGrid()
	require.NoError(t, err)
	mu := []float64{1, 0, -1, 0.5, 0, 0, 2}
	for _, m := range [][]float64{nil, mu} {
		a, err := loc.NormCounts(ctx, grid, m)
		require.NoError(t, err)
		b, err := rem.NormCounts(ctx, grid, m)
		require.NoError(t, err)
		assert.Equal(t, a, b)
	}
	a, err := loc.Sum(ctx, 2)
	require.NoError(t, err)
	b, err := rem.Sum(ctx, 2)
	require.NoError(t, err)
	assert.InDeltaSlice(t, a, b, 1e-12)
	for _, c := range []float64{0, 3, math.Inf(1)} {
		ga, ka, err := loc.SecondMoment(ctx, backend.Gonum{}, mu, c, 1.0/500)
		require.NoError(t, err)
		gb, kb, err := rem.SecondMoment(ctx, backend.Gonum{}, mu, c, 1.0/500)
		require.NoError(t, err)
		assert.True(t, mat.EqualApprox(ga, gb, 1e-12), "clip %v", c)
		assert.Equal(t, ka, kb)
	}
	assert.Equal(t, []string{pass.RowsCentredMoment, pass.RowsNormHistogram, pass.RowsClippedSum}, Kinds(true, true))
	_, err = Of(&data.Dataset{Kind: data.Trace})
	assert.Error(t, err)
}
