package privacy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// A parted release is one declared step, drawn part by part in order, each
// part once and with its declared length, and counts as drawn after the
// last part.
func TestGaussianInParts(t *testing.T) {
	a, err := NewAccountant(Grant{Kind: GrantZCDP, Rho: 1})
	require.NoError(t, err)
	p, err := a.GaussianInParts("groups", 1, 3, 2, Budget{Noise: NoiseZCDP, Rho: 0.5})
	require.NoError(t, err)
	require.Len(t, a.Steps(), 1)
	assert.Equal(t, 6, a.Steps()[0].Dim)
	src := NewSeededSource(1)
	assert.ErrorIs(t, p.AddPart(src, []float64{1, 2}), ErrDraw, "wrong part length")
	require.NoError(t, p.AddPart(src, []float64{1, 2, 3}))
	assert.Equal(t, []string{"groups"}, a.Undrawn(), "one part left")
	sym := mat.NewSymDense(2, []float64{1, 2, 2, 3})
	require.NoError(t, p.AddSymPart(src, sym))
	assert.Equal(t, sym.At(0, 1), sym.At(1, 0))
	assert.Empty(t, a.Undrawn())
	assert.ErrorIs(t, p.AddPart(src, []float64{1, 2, 3}), ErrDraw, "no part left")
	_, err = a.GaussianInParts("none", 1, 0, 2, Budget{Noise: NoiseZCDP, Rho: 0.1})
	assert.ErrorIs(t, err, ErrInvalidBudget)
}
