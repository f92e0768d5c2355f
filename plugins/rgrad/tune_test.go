package rgrad

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/quantile"
)

func scalarOf(t testing.TB, res *sdk.Result, name string) float64 {
	t.Helper()
	for _, s := range res.Scalars {
		if s.Name == name {
			return s.Value
		}
	}
	t.Fatalf("no scalar %q", name)
	return 0
}

// The estimate's steps have the sensitivities DERIVATIONS.md §10 declares:
// replacing one sample of a model data set (by another model draw, or by
// an extreme one) moves one unit between two cells of the response counts,
// changes the quantile utilities by at most 1 and the clipped moment sum by
// at most 2·clip_x·clip_y.
func TestTuneSensitivity(t *testing.T) {
	g := genTrace(t, 21, map[string]string{"n": "800", "d1": "8", "d2": "6"})
	d := g.Data
	n, p := d.N(), d.D1*d.D2
	grid, err := kernel.Grid(kernel.GridLow, kernel.GridHigh, tuneGridPerOctave)
	require.NoError(t, err)
	cx, cy := defaultClipX(Design{Kind: "identity", Cl: 1, Cu: 1}, d.D1, d.D2), 3.0
	raw := d.X.RawMatrix()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, scale := range []float64{1, 1e-3, 1e3, 1e6} {
		for rep := 0; rep < 20; rep++ {
			i := rng.IntN(n)
			x := append([]float64(nil), raw.Data...)
			y := append([]float64(nil), d.Y...)
			for j := 0; j < p; j++ {
				x[i*raw.Stride+j] = scale * rng.NormFloat64()
			}
			y[i] = scale * 4 * rng.NormFloat64()
			c0, c1 := make([]float64, len(grid)+1), make([]float64, len(grid)+1)
			kernel.ResponseCounts(c0, d.Y, grid)
			kernel.ResponseCounts(c1, y, grid)
			var l1 float64
			i0, i1 := make([]int64, len(c0)), make([]int64, len(c1))
			for k := range c0 {
				l1 += math.Abs(c1[k] - c0[k])
				assert.LessOrEqual(t, math.Abs(c1[k]-c0[k]), 1.0)
				i0[k], i1[k] = int64(c0[k]), int64(c1[k])
			}
			assert.LessOrEqual(t, l1, 2.0, "one unit moves between two cells")
			u0, err := quantile.CountUtilities(i0, tuneQuantile)
			require.NoError(t, err)
			u1, err := quantile.CountUtilities(i1, tuneQuantile)
			require.NoError(t, err)
			for k := range u0 {
				assert.LessOrEqual(t, math.Abs(u1[k]-u0[k]), 1.0)
			}
			s0, s1 := make([]float64, p), make([]float64, p)
			kernel.ClippedMoment(s0, raw.Data, raw.Stride, d.Y, cx, cy)
			kernel.ClippedMoment(s1, x, raw.Stride, y, cx, cy)
			for j := range s0 {
				s1[j] -= s0[j]
			}
			assert.LessOrEqual(t, kernel.Norm(s1), kernel.ClippedMomentSensitivity(cx, cy)*(1+1e-12), "scale %g", scale)
		}
	}
}

// With ε → ∞ the released estimates approach the true σ1, σr and σ_ξ of
// generated data (σ_ξ comparable to ‖M‖_F, where the difference
// ŝ_y² − ‖M‖² resolves it; DERIVATIONS.md §10.3). The tolerances are a
// few times the spread measured over seeds.
func TestTuneConverges(t *testing.T) {
	for _, tc := range []struct {
		name              string
		s1, sr, sxi, tol1 float64
		d1, d2, rank, n   int
		tolXi             float64
	}{
		{"rank 2", 2, 1, 1.5, 0.08, 20, 15, 2, 20000, 0.12},
		{"rank 3", 3, 1.5, 2, 0.08, 16, 16, 3, 20000, 0.12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := genTrace(t, 31, map[string]string{"n": itoa(tc.n), "d1": itoa(tc.d1), "d2": itoa(tc.d2), "rank": itoa(tc.rank),
				"sigma1": ftoa(tc.s1), "sigmar": ftoa(tc.sr), "sigma_xi": ftoa(tc.sxi)})
			res, _ := fitOK(t, "rgrad-dp", g, map[string]string{"rank": itoa(tc.rank), "iterations": "1"}, approx(1e5, 1e-6), 1)
			s1, sr, sxi := scalarOf(t, res, "sigma1_estimate"), scalarOf(t, res, "sigmar_estimate"), scalarOf(t, res, "sigma_xi_estimate")
			t.Logf("σ1 %.4f (%.4g), σr %.4f (%.4g), σ_ξ %.4f (%.4g)", s1, tc.s1, sr, tc.sr, sxi, tc.sxi)
			assert.InEpsilon(t, tc.s1, s1, tc.tol1)
			assert.InEpsilon(t, tc.sr, sr, tc.tol1)
			assert.InEpsilon(t, tc.sxi, sxi, tc.tolXi)
		})
	}
}

// Given only the rank and a budget, every private estimator runs, declares
// the estimate's steps and composes to the grant, not less and not more.
func TestTuneComposesToGrant(t *testing.T) {
	g := genTrace(t, 41, map[string]string{"n": "3000"})
	for _, grant := range []privacy.Grant{approx(1, 1e-6), {Kind: privacy.GrantZCDP, Rho: 0.2}} {
		for _, name := range []string{"rgrad-dp", "rgrad-weak", "rgrad-strict"} {
			res, acct := fitOK(t, name, g, map[string]string{"rank": "2", "iterations": "3"}, grant, 3)
			names := map[string]bool{}
			for _, st := range acct.Steps() {
				names[st.Name] = true
			}
			assert.True(t, names[shareTuneQuantile], name)
			assert.Equal(t, name != "rgrad-strict", names[shareTuneMoment], name)
			ach := acct.Achieved()
			if grant.Kind == privacy.GrantZCDP {
				assert.InEpsilon(t, grant.Rho, ach.Rho, 1e-6, name)
				continue
			}
			assert.LessOrEqual(t, ach.Epsilon, grant.Epsilon*(1+1e-9), name)
			assert.GreaterOrEqual(t, ach.Epsilon, 0.97*grant.Epsilon, "%s spends the grant (%s)", name, ach.Composition)
			assert.LessOrEqual(t, ach.Delta, grant.Delta*(1+1e-9), name)
			assert.Greater(t, scalarOf(t, res, "response_scale"), 0.0)
		}
	}
}

// When the estimate cannot locate σr (small n, small ε), the subspaces are
// released with the worst-case sensitivity √(2r), which bounds the change
// of a rank-r projector for any pair of data sets (DERIVATIONS.md §10.4).
func TestTuneUnresolvedUsesWorstCase(t *testing.T) {
	g := genTrace(t, 43, map[string]string{"n": "600", "d1": "10", "d2": "8"})
	res, _ := fitOK(t, "rgrad-dp", g, map[string]string{"rank": "2", "iterations": "2"}, approx(0.5, 1e-6), 5)
	assert.InDelta(t, 2.0, scalarOf(t, res, "sensitivity_subspace"), 1e-12, "√(2r) at r = 2")
	assert.Contains(t, strings.Join(res.Warnings, "\n"), "did not locate σr")
	rng := rand.New(rand.NewPCG(8, 9))
	for _, tc := range []struct{ d, r int }{{10, 2}, {8, 3}, {20, 5}} {
		for rep := 0; rep < 50; rep++ {
			p, q := randomProjector(tc.d, tc.r, rng), randomProjector(tc.d, tc.r, rng)
			var diff mat.Dense
			diff.Sub(p, q)
			assert.LessOrEqual(t, mat.Norm(&diff, 2), math.Sqrt(2*float64(tc.r))*(1+1e-12))
		}
	}
}

// randomProjector is UUᵀ for a d×r U with orthonormal columns.
func randomProjector(d, r int, rng *rand.Rand) *mat.Dense {
	a := mat.NewDense(d, r, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < r; j++ {
			a.Set(i, j, rng.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(a)
	var q mat.Dense
	qr.QTo(&q)
	u := q.Slice(0, d, 0, r)
	out := mat.NewDense(d, d, nil)
	out.Mul(u, u.T())
	return out
}
