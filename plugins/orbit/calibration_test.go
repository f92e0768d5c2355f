package orbit

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/analyzegauss"
)

// An all-pure run is labelled pure with the pure sum of its steps, and the
// tighter (ε, δ) statement the steps also satisfy is stated beside it, below
// the pure sum: 25 pure draws under an (ε = 1, δ = 1e-6) grant used to be
// labelled "pure 0.43-DP".
func TestExactEstimatorsLabelFollowsComposition(t *testing.T) {
	ds := genData(t, 400, 30, 2, 11)
	approx := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	cases := []struct {
		name  string
		est   sdk.Estimator
		raw   map[string]string
		grant privacy.Grant
	}{
		{"deflation rank 25, (ε, δ) grant", Deflation{}, map[string]string{"rank": "25"}, approx},
		{"deflation rank 3, pure grant", Deflation{}, map[string]string{"rank": "3"}, pure(1)},
		{"em rank 1, (ε, δ) grant", EM{}, map[string]string{"rank": "1"}, approx},
		{"rank-k rank 1, (ε, δ) grant", RankK{}, map[string]string{"rank": "1"}, approx},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, acct := run(t, tc.est, ds, tc.raw, tc.grant, 3)
			g := res.Guarantee
			spent := sumEps(acct)
			require.Equal(t, privacy.Pure, g.Kind, g.String())
			assert.InDelta(t, spent, g.Epsilon, 1e-9, "a pure label must carry the pure sum: %s", g)
			assert.Zero(t, g.Delta, "a pure label carries no δ: %s", g)
			if g.TightEpsilon > 0 {
				assert.Less(t, g.TightEpsilon, spent, g.String())
				assert.Equal(t, tc.grant.Delta, g.TightDelta, g.String())
			}
			assert.Contains(t, strings.Join(g.Assumptions, "; "), "float64", "the exact sampler's arithmetic caveat")
		})
	}
}

// For k = 1 the top eigenvalue of A moves by at most 1 when one row is
// replaced (it used to be charged 2); for k ≥ 2 the ℓ1 bound stays 2.
func TestSpectrumSensitivity(t *testing.T) {
	ds := genData(t, 300, 6, 2, 12)
	for _, tc := range []struct {
		rank string
		want float64
	}{{"1", 1}, {"2", 2}, {"3", 2}} {
		_, acct := run(t, RankK{}, ds, map[string]string{"rank": tc.rank}, pure(2), 1)
		steps := acct.Steps()
		require.NotEmpty(t, steps)
		assert.Equal(t, privacy.MechLaplace, steps[0].Mechanism)
		assert.InEpsilon(t, tc.want, steps[0].QuerySensitivity, 1e-12, "rank %s", tc.rank)
	}
	// The bound is attained and never exceeded on neighbouring data sets.
	rows := [][2]float64{{1, 0}, {0.6, 0.8}, {0, 1}}
	var worst float64
	for trial := 0; trial < 400; trial++ {
		x := make([][2]float64, len(rows))
		copy(x, rows)
		th := 2 * math.Pi * float64(trial) / 400
		x[trial%len(rows)] = [2]float64{math.Cos(th), math.Sin(th)}
		g0, err := topEig(gramOf(rows))
		require.NoError(t, err)
		g1, err := topEig(gramOf(x))
		require.NoError(t, err)
		worst = math.Max(worst, math.Abs(g1-g0))
	}
	assert.LessOrEqual(t, worst, 1+1e-12)
	assert.Greater(t, worst, 0.5)
}

func topEig(a *mat.SymDense) (float64, error) {
	var e mat.EigenSym
	if !e.Factorize(a, false) {
		return 0, assert.AnError
	}
	v := e.Values(nil)
	return v[len(v)-1], nil
}

// orbit-gauss rounds A to the noise grid before adding the grid noise, as
// every other Gaussian release does (it added grid noise to the raw float
// matrix).
func TestGaussNoisyMatrixOnGrid(t *testing.T) {
	ds := genData(t, 200, 5, 2, 13)
	a := clippedA(t, ds)
	acct, err := privacy.NewAccountant(privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.5})
	require.NoError(t, err)
	rel, err := acct.Gaussian("A + E", gaussSensitivity, analyzegauss.Dim(5), privacy.Budget{Noise: privacy.NoiseZCDP, Rho: 0.5})
	require.NoError(t, err)
	noisy, err := analyzegauss.Noisy(privacy.NewSeededSource(4), rel, a)
	require.NoError(t, err)
	gamma := rel.Grid()
	require.Positive(t, gamma)
	for i := 0; i < 5; i++ {
		for j := i; j < 5; j++ {
			k := noisy.At(i, j) / gamma
			assert.Equal(t, math.Round(k), k, "entry (%d, %d) off the grid", i, j)
		}
	}
	assert.NotEqual(t, a.At(0, 0), noisy.At(0, 0), "A itself is not modified")
	// The estimator draws its one declared release, on a grid.
	_, acct2 := run(t, Gauss{}, ds, map[string]string{"rank": "2"}, privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.5}, 1)
	assert.Empty(t, acct2.Undrawn())
	require.Len(t, acct2.Steps(), 1)
	assert.Positive(t, acct2.Steps()[0].Grid)
}

// How many rows the clip shrank is computed from the raw data: it is an
// evaluation-only scalar, never a public note.
func TestClippedRowCountIsEvaluationOnly(t *testing.T) {
	ds := genData(t, 300, 6, 2, 14)
	for _, est := range []sdk.Estimator{EM{}, RankK{}, Deflation{}, Gauss{}} {
		g := pure(1)
		if est.Info().Name == "orbit-gauss" {
			g = privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.5}
		}
		res, _ := run(t, est, ds, map[string]string{"rank": "1", "clip": "0.1"}, g, 1)
		for _, n := range res.Notes {
			assert.NotContains(t, n, "clipped", est.Info().Name)
		}
		var found bool
		for _, s := range res.Scalars {
			if s.Name == "clipped_rows" {
				found = true
				assert.Equal(t, sdk.Evaluation, s.Release)
				assert.Positive(t, s.Value)
			}
		}
		assert.True(t, found, est.Info().Name)
	}
}
