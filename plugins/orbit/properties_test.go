package orbit

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/evaluate"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

func randUnitish(r interface {
	NormFloat64() float64
	Float64() float64
}, d int, unit bool) []float64 {
	x := make([]float64, d)
	var s float64
	for i := range x {
		x[i] = r.NormFloat64()
		s += x[i] * x[i]
	}
	scale := 1 / math.Sqrt(s)
	if !unit {
		scale *= r.Float64()
	}
	for i := range x {
		x[i] *= scale
	}
	return x
}

func TestSensitivityProperties(t *testing.T) {
	// DERIVATIONS.md §3: replacing one row moves ⟨A, H⟩ by at most λ_1
	// for every H on the orbit (λ ≥ 0), and the eigenvalue vector by at
	// most 2 in ℓ1; with a negative λ the score bound fails.
	r := privacy.NewSeededSource(81).Rand()
	be := backend.Gonum{}
	const d = 6
	lambda := []float64{3, 2, 0.5}
	var worstScore, worstEig float64
	for trial := 0; trial < 200; trial++ {
		n := 2 + r.IntN(30)
		rows := make([][]float64, n)
		for i := range rows {
			rows[i] = randUnitish(r, d, trial%2 == 0)
		}
		build := func() *mat.SymDense {
			a := mat.NewSymDense(d, nil)
			for _, x := range rows {
				a.SymRankOne(a, 1, mat.NewVecDense(d, x))
			}
			return a
		}
		a := build()
		rows[r.IntN(n)] = randUnitish(r, d, trial%3 == 0)
		a2 := build()
		q, err := HaarOrthogonal(r, d, be)
		require.NoError(t, err)
		u := q.Slice(0, d, 0, 3)
		ds := math.Abs(Score(a, u, lambda) - Score(a2, u, lambda))
		worstScore = math.Max(worstScore, ds/lambda[0])
		require.LessOrEqual(t, ds, lambda[0]*(1+1e-12))
		g1, _, err := be.EigSym(a)
		require.NoError(t, err)
		g2, _, err := be.EigSym(a2)
		require.NoError(t, err)
		var l1 float64
		for i := range g1 {
			l1 += math.Abs(g1[i] - g2[i])
		}
		worstEig = math.Max(worstEig, l1)
		require.LessOrEqual(t, l1, 2*(1+1e-12))
	}
	t.Logf("worst score change/λ_1 = %.3f, worst eigenvalue ℓ1 change = %.3f", worstScore, worstEig)

	// A negative target eigenvalue breaks the bound: remove e1 and add e2
	// with λ = (1, −1) and u = (e1, e2): the score changes by 2 > λ_1.
	a := mat.NewSymDense(2, []float64{5, 0, 0, 1})
	a2 := mat.NewSymDense(2, []float64{4, 0, 0, 2})
	id := mat.NewDense(2, 2, []float64{1, 0, 0, 1})
	assert.Greater(t, math.Abs(Score(a, id, []float64{1, -1})-Score(a2, id, []float64{1, -1})), 1.0)
}

func TestGibbsPreservesExactLaw(t *testing.T) {
	// Start from exact k = 1 draws (u_1 exact, completed
	// by a Haar basis of its complement, which is its exact conditional);
	// one Gibbs sweep must leave the law of the loss unchanged.
	ds := genData(t, 300, 8, 2, 91)
	a := clippedA(t, ds)
	gamma, _, err := backend.Gonum{}.EigSym(a)
	require.NoError(t, err)
	lambda := []float64{1}
	const n = 400
	before := make([]float64, n)
	after := make([]float64, n)
	src := privacy.NewSeededSource(92)
	be := backend.Gonum{}
	for i := 0; i < n; i++ {
		dr, err := SampleOrbit(context.Background(), src, a, lambda, 0.5, SamplerAuto, 0, be, nil)
		require.NoError(t, err)
		before[i] = gamma[0] - Score(a, dr.U, lambda)
		// Complete u_1 to a rotation: Householder-free route, QR of
		// [u_1 | Gaussian] then fix the first column's sign.
		g := mat.NewDense(8, 8, nil)
		for r := 0; r < 8; r++ {
			g.Set(r, 0, dr.U.At(r, 0))
			for c := 1; c < 8; c++ {
				g.Set(r, c, src.NormFloat64())
			}
		}
		q, rr, err := be.QR(g)
		require.NoError(t, err)
		if rr.At(0, 0) < 0 {
			for r := 0; r < 8; r++ {
				q.Set(r, 0, -q.At(r, 0))
			}
		}
		res, err := GibbsSample(context.Background(), src, a, lambda, 0.5, GibbsConfig{Sweeps: 1, Init: q})
		require.NoError(t, err)
		after[i] = gamma[0] - Score(a, res.U, lambda)
	}
	assert.Less(t, ksTwo(before, after)*math.Sqrt(float64(n)/2), 1.949)
}

func TestEquivariance(t *testing.T) {
	// Equivariance: the mean of H commutes with A (the target is
	// invariant under sign flips in A's eigenbasis).
	ds := genData(t, 500, 6, 2, 101)
	a := clippedA(t, ds)
	src := privacy.NewSeededSource(102)
	lambda := []float64{1, 1}
	hbar := mat.NewDense(6, 6, nil)
	const n = 300
	for i := 0; i < n; i++ {
		dr, err := SampleOrbit(context.Background(), src, a, lambda, 0.05, SamplerAuto, 30, backend.Gonum{}, nil)
		require.NoError(t, err)
		var h mat.Dense
		h.Mul(dr.U, dr.U.T())
		hbar.Add(hbar, &h)
	}
	hbar.Scale(1.0/n, hbar)
	var ha, ah, c mat.Dense
	ha.Mul(hbar, a)
	ah.Mul(a, hbar)
	c.Sub(&ha, &ah)
	rel := mat.Norm(&c, 2) / (mat.Norm(hbar, 2) * mat.Norm(a, 2))
	assert.Less(t, rel, 0.05)
	t.Logf("relative commutator %.4f", rel)
}

func TestBoundsFormulas(t *testing.T) {
	// Reference values (DERIVATIONS.md §8): d = 20, k = 3, n = 2000, ε = 1, PCA, exact
	// calibration: τ*(0.05) ≈ 880 by bisection, ≈ 2.5·10³ closed form.
	tau := TauStar(0.5, 1, 2000, 60, 0, 0.05)
	assert.InDelta(t, 880, tau, 10)
	assert.InDelta(t, 2500, TauStarClosed(0.5, 1, 2000, 60, 0, 0.05), 150)
	assert.Less(t, tau, TauStarClosed(0.5, 1, 2000, 60, 0, 0.05))
	// Monotone in ε (through β) and in the failure probability.
	assert.Less(t, TauStar(1, 1, 2000, 60, 0, 0.05), tau)
	assert.Less(t, TauStar(0.5, 1, 2000, 60, 0, 0.5), tau)
	// DERIVATIONS.md §8: deflation prediction 162 at the default cell.
	assert.InDelta(t, 162, PredictedDeflationLoss(20, 3, 1), 1e-12)
	assert.Equal(t, 51, OrbitDim([]float64{1, 1, 1}, 20))
	assert.Equal(t, 51+3, OrbitDim([]float64{3, 2, 1}, 20))

	// LB24(c = 1) ≤ UB23 on example spectra (DERIVATIONS.md §8).
	d, k := 20, 4
	proj := make([]float64, d)
	gap := make([]float64, d)
	for i := 0; i < k; i++ {
		proj[i] = 500
		gap[i] = 800 - 150*float64(i)
	}
	for _, eps := range []float64{0.25, 1, 4} {
		for _, g := range [][]float64{proj, gap} {
			var tr float64
			for _, v := range g {
				tr += v
			}
			assert.LessOrEqual(t, LB24(g, d, k, eps, 1), UB23(g, k, eps, tr, 0.05))
		}
	}
}

func TestLossQuantileBelowTauStar(t *testing.T) {
	// The 95 % quantile of L is below τ*(0.05).
	ds := genData(t, 2000, 20, 3, 111)
	a := clippedA(t, ds)
	ls := losses(t, a, []float64{1, 1, 1}, 0.5, SamplerAuto, 100, 100, 112)
	assert.Less(t, evaluate.Quantile(0.95, ls), TauStar(0.5, 1, 2000, 60, 0, 0.05))
}

func TestRandomiseBlocksKeepsH(t *testing.T) {
	src := privacy.NewSeededSource(121)
	q, err := HaarOrthogonal(src.Rand(), 7, backend.Gonum{})
	require.NoError(t, err)
	u := mat.DenseCopyOf(q.Slice(0, 7, 0, 5))
	lambda := []float64{3, 3, 2, 1, 1}
	v, err := randomiseBlocks(src, u, lambda, backend.Gonum{})
	require.NoError(t, err)
	h := func(x *mat.Dense) *mat.Dense {
		var out mat.Dense
		xl := mat.DenseCopyOf(x)
		for j, l := range lambda {
			for i := 0; i < 7; i++ {
				xl.Set(i, j, x.At(i, j)*l)
			}
		}
		out.Mul(xl, x.T())
		return &out
	}
	assert.True(t, mat.EqualApprox(h(u), h(v), 1e-12))
	assert.False(t, mat.EqualApprox(u, v, 1e-6), "blocks must actually be rotated")
	var vtv mat.Dense
	vtv.Mul(v.T(), v)
	for i := 0; i < 5; i++ {
		for j := 0; j < 5; j++ {
			want := 0.0
			if i == j {
				want = 1
			}
			assert.InDelta(t, want, vtv.At(i, j), 1e-12)
		}
	}
}

func TestGivensGibbsMatchesColumnGibbs(t *testing.T) {
	// Cross-sampler check: two independent samplers of the same target agree
	// on the law of the loss (two-sample KS), here for a rank-3 spectrum
	// with distinct values at d = 8 in a moderate-signal regime.
	ds := genData(t, 300, 8, 3, 131)
	a := clippedA(t, ds)
	gamma, _, err := backend.Gonum{}.EigSym(a)
	require.NoError(t, err)
	lambda := []float64{1, 0.6, 0.3}
	const beta, n = 0.2, 300
	opt := Optimum(gamma, lambda)
	src1, src2 := privacy.NewSeededSource(132), privacy.NewSeededSource(133)
	giv := make([]float64, n)
	col := make([]float64, n)
	for i := 0; i < n; i++ {
		g, err := GibbsSample(context.Background(), src1, a, lambda, beta, GibbsConfig{Sweeps: 30})
		require.NoError(t, err)
		giv[i] = opt - Score(a, g.U, lambda)
		u, err := ColumnGibbsSample(context.Background(), src2, a, lambda, beta, 15, backend.Gonum{})
		require.NoError(t, err)
		col[i] = opt - Score(a, u, lambda)
	}
	mg, _ := meanSD(giv)
	mc, _ := meanSD(col)
	t.Logf("mean loss: Givens–Gibbs %.3f, column Gibbs %.3f", mg, mc)
	assert.Less(t, ksTwo(giv, col)*math.Sqrt(float64(n)/2), 1.949)
}

func TestGibbsExactAtD2(t *testing.T) {
	// Givens–Gibbs against the closed form: at d = 2 one pair update is an
	// exact draw, so θ (mod π) of u_1 follows exp(κ cos(2θ − μ)) exactly;
	// KS against the numerically integrated CDF.
	a := mat.NewSymDense(2, []float64{3, 1.2, 1.2, 0.5})
	const beta, n, grid = 0.8, 4000, 4096
	ld := logDensityD2(a, beta, grid)
	cdf := make([]float64, grid+1)
	for i, v := range ld {
		cdf[i+1] = cdf[i] + math.Exp(v)*math.Pi/grid
	}
	F := func(th float64) float64 {
		x := th / math.Pi * grid
		i := min(int(x), grid-1)
		return (cdf[i] + (x-float64(i))*(cdf[i+1]-cdf[i])) / cdf[grid]
	}
	src := privacy.NewSeededSource(141)
	th := make([]float64, n)
	for i := range th {
		g, err := GibbsSample(context.Background(), src, a, []float64{1}, beta, GibbsConfig{Sweeps: 1})
		require.NoError(t, err)
		th[i] = math.Mod(math.Atan2(g.U.At(1, 0), g.U.At(0, 0))+2*math.Pi, math.Pi)
	}
	assert.Less(t, ksOne(th, F), 1.949)
}

func TestCalibrationsSetBeta(t *testing.T) {
	ds := genData(t, 200, 6, 2, 151)
	cases := []struct {
		est  sdk.Estimator
		raw  map[string]string
		eps  float64
		want func(res *sdk.Result) float64
	}{
		{EM{}, map[string]string{"rank": "2", "spectrum": "4,1"}, 0.8, func(*sdk.Result) float64 { return 0.8 / (2 * 4) }},
		{EM{}, map[string]string{"rank": "2", "spectrum": "4,1", "sensitivity": "paper"}, 0.8, func(*sdk.Result) float64 { return 0.8 / (4 * 4) }},
		{EM{}, map[string]string{"rank": "1", "spectrum": "2", "sensitivity": "add-remove"}, 0.8, func(*sdk.Result) float64 { return 0.8 / 2 }},
		// Algorithm 2: the noisy λ̃_1 (released) enters β, with budget ε/2.
		{RankK{}, map[string]string{"rank": "2"}, 2, func(res *sdk.Result) float64 { return 1 / (2 * matrix(t, res, "Lambda").M.At(0, 0)) }},
		{RankK{}, map[string]string{"rank": "2", "sensitivity": "paper"}, 2, func(res *sdk.Result) float64 { return 1 / (4 * matrix(t, res, "Lambda").M.At(0, 0)) }},
		{Deflation{}, map[string]string{"rank": "2"}, 1, func(*sdk.Result) float64 { return 1.0 / (2 * 2) }},
	}
	for i, tc := range cases {
		res, acct := run(t, tc.est, ds, tc.raw, pure(tc.eps), uint64(i))
		assert.InDelta(t, tc.want(res), scalar(t, res, "beta"), 1e-12, "%s %v", tc.est.Info().Name, tc.raw)
		assert.InDelta(t, tc.eps, sumEps(acct), 1e-9)
	}
	res, _ := run(t, EM{}, ds, map[string]string{"rank": "1", "sensitivity": "add-remove"}, pure(1), 1)
	assert.Contains(t, res.Guarantee.Neighbours, "added or removed")
}

func TestFullRankAndCancellation(t *testing.T) {
	ds := genData(t, 200, 5, 2, 161)
	// k = d with the projection spectrum: H = I whatever U is, loss 0.
	res, _ := run(t, EM{}, ds, map[string]string{"rank": "5"}, pure(1), 1)
	assert.InDelta(t, 0, scalar(t, res, "loss"), 1e-9)
	// Covariance estimation (k = d, private spectrum) runs.
	res, _ = run(t, RankK{}, ds, map[string]string{"rank": "5"}, pure(1), 1)
	assert.Equal(t, privacy.Nominal, res.Guarantee.Kind)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a := clippedA(t, ds)
	_, err := GibbsSample(ctx, privacy.NewSeededSource(1), a, []float64{1, 1}, 1, GibbsConfig{Sweeps: 10})
	assert.ErrorIs(t, err, context.Canceled)
	seed := uint64(1)
	_, _, err = sdk.RunLocal(ctx, EM{}, ds, pinned(map[string]string{"rank": "2"}), pure(1), sdk.LocalOptions{Seed: &seed})
	assert.ErrorIs(t, err, context.Canceled)
}

// TauStarClosed is the closed-form sufficient value
// max(λ_1, (2/β)(ξ + m·log(1+16Γ) + log(1/β_f))) (DERIVATIONS.md §8).
func TauStarClosed(beta, lambda1, trace float64, m int, xi, betaF float64) float64 {
	return math.Max(lambda1, 2/beta*(xi+float64(m)*math.Log1p(16*trace)+math.Log(1/betaF)))
}
