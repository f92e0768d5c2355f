package pca

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/engine/sdk/sdktest"
)

// The private model estimate (sigma2 unset, lambda=auto) passes the core
// conformance suite: every step declared in the plan and drawn, public
// outputs classed, the guarantee the steps compose to; an implausible λ
// and lambda_upper without lambda are refused before any step.
func TestCXZEstimateConformance(t *testing.T) {
	g := spiked(t, 4000, 12, 2, "24,20", "gaussian", 61)
	sdktest.Run(t, CXZ{},
		sdktest.Case{Name: "auto", Data: g.Data, Params: map[string]string{"rank": "2", "output_sigma": "true"}, Grant: approx(2, 1e-6)},
		sdktest.Case{Name: "auto, clip, centred", Data: g.Data, Params: map[string]string{"rank": "2", "clip": "14", "center": "private", "mean_clip": "15"}, Grant: approx(2, 1e-6)},
		sdktest.Case{Name: "sigma2 given, zCDP grant, guarded", Data: g.Data, Params: map[string]string{"rank": "2", "sigma2": "1.5", "guarded": "true"}, Grant: zcdp(0.5)},
		sdktest.Case{Name: "implausible lambda", Data: g.Data, Params: map[string]string{"rank": "2", "sigma2": "1", "lambda": "1e6", "clip": "30"}, Grant: approx(1, 1e-6), Refuse: "implausible"},
		sdktest.Case{Name: "lambda_upper alone", Data: g.Data, Params: map[string]string{"rank": "2", "lambda_upper": "30"}, Grant: approx(1, 1e-6), Refuse: "lambda_upper applies to a given lambda"},
	)
}

// The plan declares the estimate's steps before stage 1 (the clip quantile
// only without a clip) and the estimate is released; the guarantee's β
// includes the estimate's failure probability.
func TestCXZEstimateSteps(t *testing.T) {
	g := spiked(t, 4000, 12, 2, "24,20", "gaussian", 62)
	cases := []struct {
		name  string
		raw   map[string]string
		steps []string
	}{
		{"auto", map[string]string{"rank": "2"}, []string{"estimate: clip quantile", "estimate: trace of the clipped second moment",
			"estimate: clipped second moment (spectrum)", "estimate: top-r block VᵀS_cV", "eigenvectors (projector ÛÛᵀ + Z)", "eigenvalues (Ũᵀ(Σ̂−σ²I)Ũ + E)"}},
		{"clip given, centred", map[string]string{"rank": "2", "clip": "14", "center": "private", "mean_clip": "15"}, []string{"mean",
			"estimate: trace of the clipped second moment", "estimate: clipped second moment (spectrum)", "estimate: top-r block VᵀS_cV", "eigenvectors (projector ÛÛᵀ + Z)", "eigenvalues (Ũᵀ(Σ̂−σ²I)Ũ + E)"}},
		{"given", map[string]string{"rank": "2", "sigma2": "1", "lambda": "24,20"}, []string{"eigenvectors (projector ÛÛᵀ + Z)", "eigenvalues (Ũᵀ(Σ̂−σ²I)Ũ + E)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, acct := fit(t, CXZ{}, g, c.raw, approx(2, 1e-6), 3)
			var names []string
			for _, s := range acct.Steps() {
				names = append(names, s.Name)
				require.NoError(t, privacy.VerifyStep(s), s.Name)
			}
			assert.Equal(t, c.steps, names)
			assert.Empty(t, acct.Undrawn())
			if c.raw["lambda"] != "" {
				assert.Equal(t, 1e-6, res.Guarantee.Beta)
				return
			}
			assert.InDelta(t, 2e-6, res.Guarantee.Beta, 1e-12, "β = the sensitivities' β + the estimate's")
			assert.Len(t, series(t, res, "lambda_lower"), 2)
			assert.Positive(t, scalar(t, res, "sigma2_upper"))
			assert.Contains(t, res.Guarantee.Assumptions[len(res.Guarantee.Assumptions)-1], "ONLY IF the rows follow the spiked Gaussian model")
		})
	}
}

// Spiked data (n = 20000, p = 20, λ = 24, 20, σ² = 1) at ε = 1: over 20
// fresh-noise runs every confidence bound holds (σ²_upper ≥ 1,
// λ_lower ≤ λ ≤ λ_upper), each point estimate lies within 4 of the
// standard deviations the estimator itself states (a bound's distance to
// the estimate over z), and the spread measured across the runs does not
// exceed those stated deviations (measured: sd(σ̂²) = 0.038, sd(λ̂_1) =
// 0.35, sd(λ̂_2) = 0.39 against stated 0.087, 0.61, 0.60).
func TestCXZEstimateAccuracy(t *testing.T) {
	g := spiked(t, 20000, 20, 2, "24,20", "gaussian", 63)
	truth := []float64{24, 20}
	const runs = 20
	z := math.Sqrt2 * math.Erfcinv(2*1e-6/6)
	var s2, s2sd []float64
	lam, lamsd := [][]float64{{}, {}}, [][]float64{{}, {}}
	for seed := uint64(1); seed <= runs; seed++ {
		res, _ := fit(t, CXZ{}, g, map[string]string{"rank": "2"}, approx(1, 1e-6), seed)
		est, up := scalar(t, res, "sigma2_estimate"), scalar(t, res, "sigma2_upper")
		l, lo, hi := series(t, res, "lambda_estimate"), series(t, res, "lambda_lower"), series(t, res, "lambda_upper")
		assert.GreaterOrEqual(t, up, 1.0, "seed %d: σ² upper bound", seed)
		s2, s2sd = append(s2, est), append(s2sd, (up-est)/z)
		assert.InDelta(t, 1, est, 4*s2sd[len(s2sd)-1], "seed %d: σ²", seed)
		for k := range truth {
			assert.LessOrEqual(t, lo[k], truth[k], "seed %d: λ_%d lower bound", seed, k+1)
			assert.GreaterOrEqual(t, hi[k], truth[k], "seed %d: λ_%d upper bound", seed, k+1)
			lam[k], lamsd[k] = append(lam[k], l[k]), append(lamsd[k], (hi[k]-lo[k])/(2*z))
			assert.InDelta(t, truth[k], l[k], 4*lamsd[k][len(lamsd[k])-1], "seed %d: λ_%d", seed, k+1)
		}
	}
	t.Logf("spread over %d runs: sd(σ̂²) = %.3g (stated %.3g), sd(λ̂_1) = %.3g (%.3g), sd(λ̂_2) = %.3g (%.3g)",
		runs, sd(s2), mean(s2sd), sd(lam[0]), mean(lamsd[0]), sd(lam[1]), mean(lamsd[1]))
	assert.LessOrEqual(t, sd(s2), mean(s2sd))
	assert.LessOrEqual(t, sd(lam[0]), mean(lamsd[0]))
	assert.LessOrEqual(t, sd(lam[1]), mean(lamsd[1]))
}

// As ε → ∞ the released estimate equals the non-private one: the same
// post-processing (EstimateSpikes with no noise) of the clipped second
// moment at the released clip.
func TestCXZEstimateNonPrivateLimit(t *testing.T) {
	g := spiked(t, 20000, 20, 2, "24,20", "gaussian", 64)
	res, _ := fit(t, CXZ{}, g, map[string]string{"rank": "2"}, zcdp(1e12), 1)
	clip := scalar(t, res, "estimate_clip")
	s, _, err := Gram(context.Background(), backend.Gonum{}, g.Data.X, nil, clip)
	require.NoError(t, err)
	var es mat.EigenSym
	require.True(t, es.Factorize(s, false))
	vals := es.Values(nil)
	top := []float64{vals[len(vals)-1], vals[len(vals)-2]}
	want, err := EstimateSpikes(SpikeStats{N: 20000, P: 20, Trace: mat.Trace(s), Top: top, Inner: top}, 1e-6)
	require.NoError(t, err)
	assert.InEpsilon(t, want.Sigma2, scalar(t, res, "sigma2_estimate"), 1e-6)
	assert.InEpsilon(t, want.Sigma2Upper, scalar(t, res, "sigma2_upper"), 1e-6)
	for k, l := range series(t, res, "lambda_estimate") {
		assert.InEpsilon(t, want.Lambda[k], l, 1e-6)
		assert.InEpsilon(t, want.LambdaLow[k], series(t, res, "lambda_lower")[k], 1e-6)
	}
	// And the non-private estimate is near the truth (sampling error only).
	assert.InDelta(t, 1, want.Sigma2, 0.03)
	assert.InDelta(t, 24, want.Lambda[0], 1.5)
	assert.InDelta(t, 20, want.Lambda[1], 1.5)
}

// EstimateSpikes inverts the sampling and noise biases exactly on
// population values: a spike λ seen through them comes back as λ.
func TestEstimateSpikesInvertsBiases(t *testing.T) {
	const n, p, s2, sdE = 1000, 50, 2.0, 0.3
	lam := []float64{30, 10}
	gamma := float64(p) / n
	var top []float64
	tr := float64(p) * s2
	for _, l := range lam {
		theta := (l + s2) * (1 + gamma*s2/l)
		top = append(top, theta+float64(p)*sdE*sdE/(theta-s2))
		tr += l
	}
	est, err := EstimateSpikes(SpikeStats{N: n, P: p, Trace: tr, Top: top, SpectrumSD: sdE}, 1e-6)
	require.NoError(t, err)
	assert.InEpsilon(t, s2, est.Sigma2, 1e-9)
	for k := range lam {
		assert.InEpsilon(t, lam[k], est.Lambda[k], 1e-9)
		assert.Less(t, est.LambdaLow[k], lam[k])
		assert.Greater(t, est.LambdaHigh[k], lam[k])
	}
	// A second eigenvalue below the p×p noise's edge σ² + 2s√p ≈ 6.2 alone
	// certifies no spike; the inner r×r release (an inner eigenvalue of 5,
	// above the sampling edge σ²(1 + √γ)² ≈ 3) still bounds it from below.
	hidden := SpikeStats{N: n, P: p, Trace: tr, Top: []float64{top[0], 5.5}, SpectrumSD: sdE}
	_, err = EstimateSpikes(hidden, 1e-6)
	require.Error(t, err)
	hidden.Inner, hidden.InnerSD = []float64{top[0] - 1, 5}, 0.01
	est, err = EstimateSpikes(hidden, 1e-6)
	require.NoError(t, err)
	assert.Positive(t, est.LambdaLow[1])
	assert.Greater(t, est.LambdaHigh[1], est.LambdaLow[1])
	// A spectrum with nothing above the noise is refused with a reason.
	_, err = EstimateSpikes(SpikeStats{N: n, P: p, Trace: float64(p) * s2, Top: []float64{s2, s2}, SpectrumSD: sdE}, 1e-6)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not rise above the noise")
}

// A given λ that rows clipped to clip cannot have is refused before any
// step; a plausible one runs, clipping the rows; without a clip a given
// λ runs with a warning note and an assumption saying it was unchecked.
func TestCXZLambdaPlausibility(t *testing.T) {
	g := spiked(t, 3000, 12, 2, "24,20", "gaussian", 65)
	refused := []map[string]string{
		{"rank": "2", "sigma2": "1", "lambda": "1e6", "clip": "30"},
		{"rank": "2", "sigma2": "1", "lambda": "500,400", "clip": "30"},
		{"rank": "2", "lambda": "1e6", "clip": "30"},
	}
	for _, raw := range refused {
		_, acct, err := sdk.RunLocal(context.Background(), CXZ{}, g.Data, raw, approx(1, 1e-6), sdk.LocalOptions{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "implausible")
		if acct != nil {
			assert.Empty(t, acct.Steps(), "refused before any step")
		}
	}
	res, _ := fit(t, CXZ{}, g, map[string]string{"rank": "2", "sigma2": "1", "lambda": "24,20", "clip": "30"}, approx(1, 1e-6), 1)
	assert.Equal(t, 30.0, scalar(t, res, "clip"))
	res, _ = fit(t, CXZ{}, g, map[string]string{"rank": "2", "sigma2": "1", "lambda": "1e6"}, approx(1, 1e-6), 1)
	assert.Contains(t, res.Warnings[0], "lambda was given without clip")
	assert.Contains(t, res.Guarantee.Assumptions[len(res.Guarantee.Assumptions)-1], "could not be checked")
}

// sd is the sample standard deviation.
func sd(v []float64) float64 {
	var m, s float64
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(len(v)-1))
}

// mean is the arithmetic mean.
func mean(v []float64) float64 {
	var m float64
	for _, x := range v {
		m += x
	}
	return m / float64(len(v))
}
