package clip

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/privacy"
)

func randRows(n, p int, sd float64, seed uint64) *mat.Dense {
	rng := rand.New(rand.NewPCG(seed, 1))
	x := mat.NewDense(n, p, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < p; j++ {
			x.Set(i, j, sd*rng.NormFloat64())
		}
	}
	return x
}

// naive is scale·Σ w_i²(x_i−μ)(x_i−μ)ᵀ row by row.
func naive(x *mat.Dense, mu []float64, c, scale float64) *mat.SymDense {
	n, p := x.Dims()
	out := mat.NewSymDense(p, nil)
	for i := 0; i < n; i++ {
		row := mat.NewVecDense(p, nil)
		for j := 0; j < p; j++ {
			v := x.At(i, j)
			if mu != nil {
				v -= mu[j]
			}
			row.SetVec(j, v)
		}
		if nr := row.Norm(2); c > 0 && nr > c {
			row.ScaleVec(c/nr, row)
		}
		out.SymRankOne(out, scale, row)
	}
	return out
}

func TestSecondMoment(t *testing.T) {
	x := randRows(300, 6, 2, 1)
	cases := []struct {
		name  string
		mu    []float64
		c     float64
		scale float64
	}{
		{"no clip", nil, 0, 1.0 / 300},
		{"clip", nil, 3, 1.0 / 300},
		{"centred and clipped, orbit scale", []float64{1, 0, -1, 0, 2, 0}, 3, 1.0 / 9},
		{"clip above every row", nil, 1e6, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, nClip, err := SecondMoment(context.Background(), backend.Gonum{}, x, tc.mu, tc.c, tc.scale)
			require.NoError(t, err)
			assert.True(t, mat.EqualApprox(naive(x, tc.mu, tc.c, tc.scale), got, 1e-10))
			if tc.c == 0 || tc.c == 1e6 {
				assert.Zero(t, nClip)
			} else {
				assert.Positive(t, nClip)
			}
		})
	}
}

// Replacing one row moves the clipped second moment by at most
// MomentSensitivity in Frobenius norm; orthogonal rows of norm ≥ c attain it.
func TestMomentSensitivity(t *testing.T) {
	const c, n = 2.0, 50
	x := randRows(n, 5, 3, 2)
	rng := rand.New(rand.NewPCG(3, 4))
	bound := MomentSensitivity(c, 1.0/n)
	var worst float64
	for trial := 0; trial < 200; trial++ {
		y := mat.DenseCopyOf(x)
		i := rng.IntN(n)
		for j := 0; j < 5; j++ {
			y.Set(i, j, 10*rng.NormFloat64())
		}
		if trial == 0 {
			for j := 0; j < 5; j++ {
				x.Set(i, j, 0)
				y.Set(i, j, 0)
			}
			x.Set(i, 0, 5)
			y.Set(i, 1, 5)
		}
		a, _, err := SecondMoment(context.Background(), backend.Gonum{}, x, nil, c, 1.0/n)
		require.NoError(t, err)
		b, _, err := SecondMoment(context.Background(), backend.Gonum{}, y, nil, c, 1.0/n)
		require.NoError(t, err)
		var d mat.Dense
		d.Sub(a, b)
		worst = math.Max(worst, mat.Norm(&d, 2)/bound)
		if trial == 0 {
			assert.InDelta(t, 1, worst, 1e-12)
		}
	}
	assert.LessOrEqual(t, worst, 1+1e-12)
}

func TestSumAndFinite(t *testing.T) {
	x := mat.NewDense(2, 2, []float64{3, 4, 0.3, 0.4})
	s, err := Sum(context.Background(), x, 1)
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{0.9, 1.2}, s, 1e-12)
	assert.NoError(t, Finite(x))
	x.Set(1, 0, math.NaN())
	assert.ErrorContains(t, Finite(x), "row 1, column 0")
	g, _, err := SecondMoment(context.Background(), backend.Gonum{}, x, nil, 0, 1)
	require.NoError(t, err)
	assert.ErrorContains(t, CheckMoment(g, x), "row 1, column 0")
}

// PrivateNorm refuses non-finite data (naming the entry) and rows whose
// norm overflows, before it declares any step.
func TestPrivateNormRefusesBeforeAnyStep(t *testing.T) {
	cases := []struct {
		name string
		bad  float64
		want string
	}{
		{"NaN", math.NaN(), "row 2, column 1"},
		{"+Inf", math.Inf(1), "row 2, column 1"},
		{"overflowing norm", 1e200, "data row 2: its norm overflows"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := randRows(5, 3, 1, 1)
			x.Set(2, 1, c.bad)
			acct, err := privacy.NewAccountant(privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1})
			require.NoError(t, err)
			_, err = PrivateNorm(context.Background(), acct, privacy.NewSeededSource(1), "clip quantile",
				privacy.Budget{Noise: privacy.NoisePure, Epsilon: 0.1}, x, nil, 0.5)
			assert.ErrorContains(t, err, c.want)
			assert.Empty(t, acct.Steps())
		})
	}
}
