package analyzegauss

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/privacy"
)

// The release rounds S to the noise grid before adding grid noise, leaves S
// untouched, and returns orthonormal top-k eigenvectors of S + E.
func TestReleaseOnGrid(t *testing.T) {
	s := mat.NewSymDense(3, []float64{1.1, 0.2, 0.3, 0.2, 2.7, 0.1, 0.3, 0.1, 0.5})
	orig := mat.NewSymDense(3, nil)
	orig.CopySym(s)
	acct, err := privacy.NewAccountant(privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1})
	require.NoError(t, err)
	rel, err := acct.Gaussian("S + E", 0.01, Dim(3), privacy.Budget{Noise: privacy.NoiseZCDP, Rho: 1})
	require.NoError(t, err)
	noisy, vals, vecs, _, err := Release(context.Background(), backend.Gonum{}, privacy.NewSeededSource(3), rel, s, 2, false)
	require.NoError(t, err)
	assert.True(t, mat.Equal(orig, s))
	assert.Empty(t, acct.Undrawn())
	_, _, _, _, err = Release(context.Background(), backend.Gonum{}, privacy.NewSeededSource(3), rel, s, 2, false)
	assert.ErrorIs(t, err, privacy.ErrDraw, "a release draws once")
	g := rel.Grid()
	for i := 0; i < 3; i++ {
		for j := i; j < 3; j++ {
			k := noisy.At(i, j) / g
			assert.Equal(t, math.Round(k), k)
		}
	}
	require.Len(t, vals, 2)
	assert.GreaterOrEqual(t, vals[0], vals[1])
	_, c := vecs.Dims()
	assert.Equal(t, 2, c)
	assert.Equal(t, 6, Dim(3))
}
