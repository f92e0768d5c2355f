package pca

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/evaluate"
	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// naiveGram is Σ w_i²(x_i−μ)(x_i−μ)ᵀ/n row by row.
func naiveGram(x *mat.Dense, mu []float64, clip float64) *mat.Dense {
	n, p := x.Dims()
	out := mat.NewDense(p, p, nil)
	for i := 0; i < n; i++ {
		row := append([]float64(nil), x.RawRowView(i)...)
		if mu != nil {
			for j := range row {
				row[j] -= mu[j]
			}
		}
		nr := norm(row)
		if clip > 0 && nr > clip {
			for j := range row {
				row[j] *= clip / nr
			}
		}
		for a := 0; a < p; a++ {
			for b := 0; b < p; b++ {
				out.Set(a, b, out.At(a, b)+row[a]*row[b]/float64(n))
			}
		}
	}
	return out
}

func TestGramPaths(t *testing.T) {
	g := spiked(t, 3000, 12, 2, "24,20", "gaussian", 30)
	x := g.Data.X
	mu := make([]float64, 12)
	for j := range mu {
		mu[j] = 0.3 * float64(j)
	}
	cases := []struct {
		name     string
		mu       []float64
		clip     float64
		clipping bool
	}{
		{"raw", nil, 0, false},
		{"clip-inactive", nil, 1e6, false},
		{"clip-active", nil, 5, true},
		{"centred", mu, 0, false},
		{"centred-clipped", mu, 5, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, nClip, err := Gram(context.Background(), backend.Gonum{}, x, tc.mu, tc.clip)
			require.NoError(t, err)
			assert.True(t, mat.EqualApprox(naiveGram(x, tc.mu, tc.clip), mat.DenseCopyOf(got), 1e-10))
			assert.Equal(t, tc.clipping, nClip > 0)
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := Gram(ctx, backend.Gonum{}, x, mu, 5)
	require.ErrorIs(t, err, context.Canceled)
}

// P11: the shared sin-θ (engine/evaluate) against the dense projector
// distances: ‖UUᵀ − VVᵀ‖₂ = ‖sin Θ‖₂ and ‖UUᵀ − VVᵀ‖_F = √2·‖sin Θ‖_F.
func TestSinThetaCrossCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, r := range []int{1, 3, 5} {
		u := randomBasis(20, r, rng)
		v := randomBasis(20, r, rng)
		sp, fr, err := evaluate.SinTheta(u, v)
		require.NoError(t, err)
		var pu, pv, d mat.Dense
		pu.Mul(u, u.T())
		pv.Mul(v, v.T())
		d.Sub(&pu, &pv)
		dsp, err := evaluate.SpectralNorm(&d)
		require.NoError(t, err)
		assert.InDelta(t, dsp, sp, 1e-9)
		assert.InDelta(t, mat.Norm(&d, 2), math.Sqrt2*fr, 1e-9)
	}
}

func randomBasis(p, r int, rng *rand.Rand) *mat.Dense {
	g := mat.NewDense(p, r, nil)
	for i := 0; i < p; i++ {
		for k := 0; k < r; k++ {
			g.Set(i, k, rng.NormFloat64())
		}
	}
	q, _, _ := backend.Gonum{}.QR(g)
	return q
}

// Analyze Gauss: orthonormal output, worst-case guarantee, the replace-one
// sensitivity bound is attained by orthogonal rows of norm γ and never
// exceeded, ε→∞ recovers non-private PCA of the clipped data, ε-slope ≈ −1.
func TestAnalyzeGauss(t *testing.T) {
	g := spiked(t, 20000, 30, 2, "24,20", "gaussian", 31)
	clip := 12.0
	res, acct := fit(t, AnalyzeGauss{}, g, map[string]string{"rank": "2", "clip": "12", "output_sigma": "true"}, approx(1, 1e-5), 1)
	assert.Less(t, maxAbsOffIdentity(matrix(t, res, "U")), 1e-10)
	assert.True(t, isSymmetric(matrix(t, res, "Sigma")))
	// One zCDP-calibrated Gaussian step is certified by the exact Gaussian
	// composition: (ε, δ) with ε at most the grant's.
	assert.Equal(t, privacy.Approx, res.Guarantee.Kind)
	assert.LessOrEqual(t, res.Guarantee.Epsilon, 1+1e-9)
	require.Len(t, acct.Steps(), 1)
	assert.InEpsilon(t, math.Sqrt2*clip*clip/20000, acct.Steps()[0].QuerySensitivity, 1e-12)

	// Empirical sensitivity on neighbouring data sets (random and orthogonal
	// replacement rows of various norms).
	rng := rand.New(rand.NewPCG(3, 4))
	n, p := 500, 8
	x := mat.NewDense(n, p, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < p; j++ {
			x.Set(i, j, 3*rng.NormFloat64())
		}
	}
	base, _, err := Gram(context.Background(), backend.Gonum{}, x, nil, 2)
	require.NoError(t, err)
	bound := math.Sqrt2 * 2 * 2 / float64(n) // √2·γ²/n
	var worst float64
	for trial := 0; trial < 200; trial++ {
		y := mat.DenseCopyOf(x)
		i := rng.IntN(n)
		for j := 0; j < p; j++ {
			y.Set(i, j, 10*rng.NormFloat64())
		}
		if trial == 0 { // the extremal pair: x_i ⟂ y_i, both of norm ≥ γ
			for j := 0; j < p; j++ {
				x.Set(i, j, 0)
				y.Set(i, j, 0)
			}
			x.Set(i, 0, 5)
			y.Set(i, 1, 5)
			base, _, _ = Gram(context.Background(), backend.Gonum{}, x, nil, 2)
		}
		nb, _, err := Gram(context.Background(), backend.Gonum{}, y, nil, 2)
		require.NoError(t, err)
		var d mat.Dense
		d.Sub(mat.DenseCopyOf(nb), mat.DenseCopyOf(base))
		worst = math.Max(worst, mat.Norm(&d, 2)/bound)
		if trial == 0 {
			assert.InDelta(t, 1, worst, 1e-12, "orthogonal rows of norm γ attain the bound")
		}
	}
	assert.LessOrEqual(t, worst, 1+1e-12)

	// ε→∞: equals non-private PCA of the clipped rows.
	ref, _ := fit(t, NonPrivate{}, g, map[string]string{"rank": "2", "clip": "12"}, zcdp(1), 0)
	big, _ := fit(t, AnalyzeGauss{}, g, map[string]string{"rank": "2", "clip": "12"}, zcdp(1e24), 2)
	sp, _, err := evaluate.SinTheta(matrix(t, ref, "U"), matrix(t, big, "U"))
	require.NoError(t, err)
	assert.Less(t, sp, 1e-10)

	// ε-slope in the privacy-dominated regime (classical calibration: σ ∝ 1/ε).
	u := g.Truth["U"]
	eps := []float64{0.125, 0.25, 0.5, 1}
	var errs []float64
	for _, e := range eps {
		var v []float64
		for seed := uint64(0); seed < 7; seed++ {
			res, _ := fit(t, AnalyzeGauss{}, g, map[string]string{"rank": "2", "clip": "12", "noise": "classical"}, approx(e, 1e-5), seed)
			sp, _, _ := evaluate.SinTheta(u, matrix(t, res, "U"))
			v = append(v, sp)
		}
		errs = append(errs, median(v))
	}
	t.Logf("Analyze Gauss errors %v slope %.3f", errs, slope(eps, errs))
	assert.InDelta(t, -1, slope(eps, errs), 0.2)
}

func TestAnalyzeGaussCentredAndBadInput(t *testing.T) {
	g := spiked(t, 5000, 20, 2, "24,20", "gaussian", 32)
	// Shift the data by a constant: private centring recovers the subspace.
	shifted := mat.DenseCopyOf(g.Data.X)
	n, p := shifted.Dims()
	for i := 0; i < n; i++ {
		for j := 0; j < p; j++ {
			shifted.Set(i, j, shifted.At(i, j)+3)
		}
	}
	d := *g.Data
	d.X = shifted
	seed := uint64(5)
	res, acct, err := sdk.RunLocal(context.Background(), AnalyzeGauss{}, &d, map[string]string{"rank": "2", "clip": "25", "center": "private"}, zcdp(50), sdk.LocalOptions{Seed: &seed})
	require.NoError(t, err)
	require.Len(t, acct.Steps(), 3, "the mean's two steps and the second moment")
	assert.InEpsilon(t, 5.0, acct.Steps()[0].Rho, 1e-12, "half of mean_share 0.2 of ρ = 50")
	assert.InEpsilon(t, 5.0, acct.Steps()[1].Rho, 1e-12)
	sp, _, err := evaluate.SinTheta(g.Truth["U"], matrix(t, res, "U"))
	require.NoError(t, err)
	assert.Less(t, sp, 0.2)

	for name, tc := range map[string]struct {
		raw   map[string]string
		grant privacy.Grant
		want  string
	}{
		"rank":      {map[string]string{"rank": "21", "clip": "5"}, approx(1, 1e-5), "rank 21"},
		"clip":      {map[string]string{"rank": "2", "clip": "0"}, approx(1, 1e-5), "clip"},
		"classical": {map[string]string{"rank": "2", "clip": "5", "noise": "classical"}, approx(2, 1e-5), "ε ≤ 1"},
		"pure":      {map[string]string{"rank": "2", "clip": "5"}, pure(1), "does not accept"},
	} {
		t.Run(name, func(t *testing.T) {
			_, acct, err := sdk.RunLocal(context.Background(), AnalyzeGauss{}, g.Data, tc.raw, tc.grant, sdk.LocalOptions{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			if acct != nil {
				assert.Empty(t, acct.Steps())
			}
		})
	}
	nan := mat.DenseCopyOf(g.Data.X)
	nan.Set(9, 4, math.NaN())
	d.X = nan
	_, acct, err = sdk.RunLocal(context.Background(), AnalyzeGauss{}, &d, map[string]string{"rank": "2", "clip": "5"}, approx(1, 1e-5), sdk.LocalOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "row 9, column 4")
	assert.Empty(t, acct.Steps())
}

// Amin et al.: pure ε-DP ledger (eigenvalues + r vectors summing to ε),
// orthonormal output, error falling with ε, and near-exact recovery for a
// very large ε.
func TestAmin(t *testing.T) {
	g := spiked(t, 20000, 30, 3, "24,20,16", "gaussian", 33)
	u := g.Truth["U"]
	res, acct := fit(t, Amin{}, g, map[string]string{"rank": "3", "clip": "12", "output_sigma": "true"}, pure(1), 1)
	assert.Less(t, maxAbsOffIdentity(matrix(t, res, "U")), 1e-10)
	assert.True(t, isSymmetric(matrix(t, res, "Sigma")))
	assert.Equal(t, privacy.Pure, res.Guarantee.Kind)
	assert.InDelta(t, 1, res.Guarantee.Epsilon, 1e-9)
	steps := acct.Steps()
	require.Len(t, steps, 4)
	assert.Equal(t, privacy.MechLaplace, steps[0].Mechanism)
	assert.InEpsilon(t, 2*144.0/20000, steps[0].QuerySensitivity, 1e-12)
	for _, s := range steps[1:] {
		assert.Equal(t, privacy.MechExponential, s.Mechanism)
		assert.InEpsilon(t, 0.25, s.Epsilon, 1e-12)
		assert.InEpsilon(t, 0.25*20000/(2*144.0), s.Scale, 1e-12)
	}
	assert.Len(t, series(t, res, "eigenvalues"), 3)

	eps := []float64{0.25, 1, 4, 1e6}
	var errs []float64
	for _, e := range eps {
		var v []float64
		for seed := uint64(0); seed < 5; seed++ {
			res, _ := fit(t, Amin{}, g, map[string]string{"rank": "3", "clip": "12"}, pure(e), seed)
			sp, _, _ := evaluate.SinTheta(u, matrix(t, res, "U"))
			v = append(v, sp)
		}
		errs = append(errs, median(v))
	}
	t.Logf("Amin median errors %v", errs)
	assert.Greater(t, errs[0], errs[1])
	assert.Greater(t, errs[1], errs[2])
	ref, _ := fit(t, NonPrivate{}, g, map[string]string{"rank": "3", "clip": "12"}, zcdp(1), 0)
	big, _ := fit(t, Amin{}, g, map[string]string{"rank": "3", "clip": "12"}, pure(1e9), 3)
	sp, _, _ := evaluate.SinTheta(matrix(t, ref, "U"), matrix(t, big, "U"))
	assert.Less(t, sp, 0.01, "ε→∞ concentrates on the non-private subspace")
	// Exponential-mechanism rate: sin² θ ∝ 1/ε, so sin θ ∝ ε^(−1/2) when the
	// error is privacy-dominated (ε = 1 → 4).
	b := slope(eps[1:3], errs[1:3])
	t.Logf("Amin slope ε=1→4: %.3f", b)
	assert.InDelta(t, -0.5, b, 0.2)
}

func TestAminFullBasisAndCentring(t *testing.T) {
	g := spiked(t, 3000, 6, 2, "24,20", "gaussian", 34)
	res, acct := fit(t, Amin{}, g, map[string]string{"rank": "6", "clip": "10", "center": "private", "eigenvalue_share": "0", "noise": "pure"}, approx(2, 1e-6), 1)
	u := matrix(t, res, "U")
	assert.Less(t, maxAbsOffIdentity(u), 1e-10, "the Householder deflation keeps a full orthonormal basis")
	steps := acct.Steps()
	require.Len(t, steps, 1+5, "mean (one step under the pure split) + p−1 sampled vectors (the last is determined)")
	var tot float64
	for _, s := range steps {
		tot += s.Epsilon
	}
	assert.InDelta(t, 2, tot, 1e-9)
	assert.Equal(t, privacy.Pure, res.Guarantee.Kind)

	_, _, err := sdk.RunLocal(context.Background(), Amin{}, g.Data, map[string]string{"rank": "2", "clip": "0"}, pure(1), sdk.LocalOptions{})
	require.Error(t, err)
	_, _, err = sdk.RunLocal(context.Background(), Amin{}, g.Data, map[string]string{"rank": "2", "clip": "5"}, zcdp(1), sdk.LocalOptions{})
	require.Error(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = sdk.RunLocal(ctx, Amin{}, g.Data, map[string]string{"rank": "2", "clip": "5"}, pure(1), sdk.LocalOptions{})
	require.ErrorIs(t, err, context.Canceled)
}

func TestNonPrivate(t *testing.T) {
	g := spiked(t, 20000, 30, 2, "24,20", "gaussian", 35)
	res, _ := fit(t, NonPrivate{}, g, map[string]string{"rank": "2", "output_sigma": "true"}, zcdp(1), 0)
	assert.Equal(t, privacy.None, res.Guarantee.Kind)
	for _, m := range res.Matrices {
		assert.Equal(t, sdk.Evaluation, m.Release)
	}
	sp, _, err := evaluate.SinTheta(g.Truth["U"], matrix(t, res, "U"))
	require.NoError(t, err)
	assert.Less(t, sp, 0.05)
	ev := series(t, res, "eigenvalues")
	assert.InDelta(t, 25, ev[0], 1.5)
	assert.InDelta(t, 21, ev[1], 1.5)
	// Captured variance of the estimated subspace equals the sum of the top
	// eigenvalues.
	sh := backend.Gonum{}.Gram(1/20000.0, g.Data.X)
	assert.InDelta(t, ev[0]+ev[1], evaluate.CapturedVariance(sh, matrix(t, res, "U")), 1e-9)
}

func TestEstimatorCatalogue(t *testing.T) {
	names := map[string]bool{}
	for _, e := range Estimators() {
		info := e.Info()
		assert.False(t, names[info.Name], "duplicate %s", info.Name)
		names[info.Name] = true
		assert.Equal(t, Version, info.Version)
		assert.NotEmpty(t, info.Summary)
		assert.NotEmpty(t, info.Guarantee)
		assert.NotEmpty(t, info.Grants)
		for _, p := range info.Params {
			assert.NotEmpty(t, p.Doc, "%s.%s", info.Name, p.Name)
			assert.NotEqual(t, "seed", p.Name)
		}
	}
}

// The spiked generator's rows have covariance U·diag(λ)·Uᵀ + σ²I (all
// three factor laws), and U has orthonormal columns.
func TestSpikedGenerator(t *testing.T) {
	for _, noise := range []string{"gaussian", "rademacher", "uniform"} {
		g := spiked(t, 40000, 10, 2, "6,3", noise, 36)
		u := g.Truth["U"]
		assert.Less(t, maxAbsOffIdentity(u), 1e-12)
		sh := backend.Gonum{}.Gram(1/40000.0, g.Data.X)
		var d mat.Dense
		d.Sub(mat.DenseCopyOf(sh), g.Truth["Sigma"])
		// Entry sd ≈ √((Σ_jj Σ_kk + Σ_jk²)/n) ≤ √(2·7²/40000) ≈ 0.05.
		assert.Less(t, mat.Norm(&d, math.Inf(1))/10, 0.2, noise)
		sp, _, err := evaluate.SinTheta(u, mustTop(t, sh, 2))
		require.NoError(t, err)
		assert.Less(t, sp, 0.1, noise)
		assert.Equal(t, 6.0, g.Scalars["lambda_1"])
	}
}

func mustTop(t *testing.T, s *mat.SymDense, r int) *mat.Dense {
	_, v, err := backend.Gonum{}.EigSymTop(s, r)
	require.NoError(t, err)
	return v
}

// The FromCov entry points reproduce the estimators when given the same
// Gram matrix and seed, up to rounding: the fit's pass may sum the Gram in
// another order than this test's single product (with OpenBLAS on one
// thread, pca-cxz's U differs in the last bits).
func TestFromCovMatchesFit(t *testing.T) {
	g := spiked(t, 5000, 20, 2, "24,20", "gaussian", 37)
	seed := uint64(8)
	sh, _, err := Gram(context.Background(), backend.Gonum{}, g.Data.X, nil, 0)
	require.NoError(t, err)
	for _, tc := range []struct {
		est sdk.Estimator
		raw map[string]string
		fit func(context.Context, *sdk.Run, map[string]string, *mat.SymDense, int) (*sdk.Result, error)
	}{
		{CXZ{}, map[string]string{"rank": "2", "sigma2": "1", "lambda": "24,20", "center": "none"}, CXZFromCov},
		{AnalyzeGauss{}, map[string]string{"rank": "2", "clip": "1000", "center": "none"}, AnalyzeGaussFromCov},
	} {
		want, _, err := sdk.RunLocal(context.Background(), tc.est, g.Data, tc.raw, approx(1, 1e-5), sdk.LocalOptions{Seed: &seed, Backend: backend.Gonum{}})
		require.NoError(t, err)
		acct, err := privacy.NewAccountant(approx(1, 1e-5))
		require.NoError(t, err)
		got, err := tc.fit(context.Background(), &sdk.Run{Acct: acct, Rand: privacy.NewSeededSource(seed), Backend: backend.Gonum{}}, tc.raw, sh, 5000)
		require.NoError(t, err)
		assert.True(t, mat.EqualApprox(matrix(t, want, "U"), matrix(t, got, "U"), 1e-9), tc.est.Info().Name)
	}
}

// Gram returns (1/n)·Σ_i w_i²(x_i−μ)(x_i−μ)ᵀ with w_i = min(1, c/‖x_i−μ‖)
// (c ≤ 0 or +Inf: no clipping; mu nil: μ = 0) and the number of rows the
// clip shrank: kernel.SecondMoment on pca's 1/n scale. x is never written.
func Gram(ctx context.Context, be backend.Backend, x *mat.Dense, mu []float64, c float64) (*mat.SymDense, int, error) {
	n, _ := x.Dims()
	return kernel.SecondMoment(ctx, x, mu, c, 1/float64(n), be)
}
