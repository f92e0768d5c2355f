package privacy

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Reference values below were computed independently with mpmath at 60
// digits (bisection on the optimality conditions of the CKS bound, a
// golden-section search of sup_α (ε − c(α))/α for the inverse, and
// bisection on the Balle–Wang δ(σ) for the analytic Gaussian).

func relErr(got, want float64) float64 { return math.Abs(got-want) / math.Abs(want) }

func TestEpsilonFromRhoTight(t *testing.T) {
	cases := []struct{ rho, delta, want float64 }{
		{0.025, 1e-6, 1.0140742547261279596},
		{0.5, 1e-5, 4.7283869849433138815},
		{1e-4, 1e-10, 0.080143698441725965286},
		{2.0, 1e-3, 8.4160642943212767466},
		{1e-8, 1e-6, 0.00034558817880101257433},
		{10.0, 1e-12, 42.179849794261014993},
	}
	for _, c := range cases {
		got := EpsilonFromRho(c.rho, c.delta)
		assert.Less(t, relErr(got, c.want), 1e-9, "ρ=%g δ=%g: got %.17g want %.17g", c.rho, c.delta, got, c.want)
		assert.LessOrEqual(t, got, EpsilonFromRhoSimple(c.rho, c.delta), "tight must not exceed simple")
	}
}

func TestEpsilonFromRhoSimpleClosedForm(t *testing.T) {
	// ρ = 0.5, δ = e^-8: ε = 0.5 + 2·sqrt(4) = 4.5 exactly.
	assert.InDelta(t, 4.5, EpsilonFromRhoSimple(0.5, math.Exp(-8)), 1e-12)
	r, err := RhoForEpsDeltaSimple(4.5, math.Exp(-8))
	require.NoError(t, err)
	assert.Less(t, relErr(r, 0.5), 1e-12)
	assert.True(t, math.IsNaN(EpsilonFromRho(-1, 0.1)))
	assert.True(t, math.IsNaN(EpsilonFromRho(1, 0)))
	assert.Equal(t, 0.0, EpsilonFromRho(0, 1e-6))
}

func TestEpsilonFromRhoKnownOptimum(t *testing.T) {
	// Pick α0 and L, set ρ so that α0 is the optimum of the CKS bound
	// (ρ(α0−1)² = L − ln α0); then ε has a closed form.
	for _, c := range []struct{ a0, l float64 }{{5, 14}, {1.5, 3}, {40, 25}, {1000, 30}} {
		rho := (c.l - math.Log(c.a0)) / ((c.a0 - 1) * (c.a0 - 1))
		want := c.a0*rho + (c.l-math.Log(c.a0))/(c.a0-1) + math.Log(1-1/c.a0)
		got := EpsilonFromRho(rho, math.Exp(-c.l))
		assert.Less(t, relErr(got, want), 1e-9, "α0=%g L=%g", c.a0, c.l)
	}
}

// The tight conversion's curve passes through reference points of the
// CKS bound δ(ε) = inf_α exp((α−1)(αρ−ε)) (1−1/α)^α / (α−1), computed to 20
// digits: at δ = δ(ε) it gives back ε.
func TestEpsilonFromRhoReferencePoints(t *testing.T) {
	cases := []struct{ rho, eps, delta float64 }{
		{0.025, 1.0, 1.3361319064032232663e-6},
		{0.5, 3.0, 0.0051431840638621492912},
		{1e-4, 0.1, 1.0636984768837400984e-14},
		{2.0, 8.0, 0.0020028453852465600311},
	}
	for _, c := range cases {
		got := EpsilonFromRho(c.rho, c.delta)
		assert.Less(t, relErr(got, c.eps), 1e-8, "ρ=%g δ=%g: got %.17g", c.rho, c.delta, got)
	}
}

func TestRhoForEpsDeltaTight(t *testing.T) {
	cases := []struct{ eps, delta, want float64 }{
		{1.0, 1e-6, 0.024355970359538372796},
		{0.1, 1e-5, 0.00043299372940180956898},
		{8.0, 1e-9, 0.73283328738245348802},
		{0.01, 1e-8, 2.546136103383918945e-6},
		{3.0, 1e-3, 0.38101615980879632974},
	}
	for _, c := range cases {
		got, err := RhoForEpsDelta(c.eps, c.delta)
		require.NoError(t, err)
		assert.Less(t, relErr(got, c.want), 1e-9, "ε=%g δ=%g: got %.17g", c.eps, c.delta, got)
		// Valid side and strictly more budget than the simple inverse.
		assert.LessOrEqual(t, EpsilonFromRho(got, c.delta), c.eps)
		simple, _ := RhoForEpsDeltaSimple(c.eps, c.delta)
		assert.Greater(t, got, simple)
	}
}

func TestRhoForEpsDeltaExtremes(t *testing.T) {
	for _, eps := range []float64{1e-9, 1e-4, 0.5, 20, 500} {
		for _, delta := range []float64{1e-300, 1e-50, 1e-10, 0.5, 0.999} {
			rho, err := RhoForEpsDelta(eps, delta)
			require.NoError(t, err, "ε=%g δ=%g", eps, delta)
			require.True(t, rho > 0 && !math.IsInf(rho, 0), "ε=%g δ=%g ρ=%g", eps, delta, rho)
			e := EpsilonFromRho(rho, delta)
			assert.LessOrEqual(t, e, eps, "ε=%g δ=%g", eps, delta)
			if delta <= 0.1 { // for large δ the bound crosses 0 near tiny ε with heavy cancellation
				assert.Greater(t, e, eps*(1-1e-9), "not the largest ρ: ε=%g δ=%g", eps, delta)
			}
		}
	}
}

func TestRhoForEpsDeltaRejects(t *testing.T) {
	for _, c := range []struct{ eps, delta float64 }{
		{0, 1e-6}, {-1, 1e-6}, {math.Inf(1), 1e-6}, {math.NaN(), 1e-6}, {1, 0}, {1, 1}, {1, math.NaN()}, {1, -0.1},
	} {
		_, err := RhoForEpsDelta(c.eps, c.delta)
		assert.ErrorIs(t, err, ErrInvalidBudget, "ε=%v δ=%v", c.eps, c.delta)
	}
}

func TestClassicalGaussian(t *testing.T) {
	s, err := ClassicalGaussianSigma(2, 0.5, 1e-5)
	require.NoError(t, err)
	assert.Less(t, relErr(s, 2*math.Sqrt(2*math.Log(1.25e5))/0.5), 1e-15)
	_, err = ClassicalGaussianSigma(1, 1.5, 1e-5)
	assert.ErrorIs(t, err, ErrInvalidBudget)
	assert.Contains(t, err.Error(), "ε ≤ 1")
	_, err = ClassicalGaussianSigma(0, 0.5, 1e-5)
	assert.ErrorIs(t, err, ErrInvalidBudget)
}

func TestAnalyticGaussianSigma(t *testing.T) {
	cases := []struct{ eps, delta, want float64 }{
		{1.0, 1e-5, 3.7306316348159418139},
		{0.1, 1e-6, 36.30469042619578316},
		{10.0, 1e-9, 0.65024691895865737585},
		{0.01, 1e-3, 93.907419839851576256},
		{50.0, 1e-12, 0.19071044240637713916},
		{3.0, 1e-100, 7.0360972533622325747},
	}
	for _, c := range cases {
		for _, sens := range []float64{1, 0.25, 1e3} {
			got, err := AnalyticGaussianSigma(sens, c.eps, c.delta)
			require.NoError(t, err)
			assert.Less(t, relErr(got, sens*c.want), 1e-9, "ε=%g δ=%g Δ=%g: got %.17g", c.eps, c.delta, sens, got)
			assert.LessOrEqual(t, AnalyticGaussianDelta(sens, got, c.eps), c.delta*(1+1e-12))
		}
		if c.eps <= 1 {
			cl, _ := ClassicalGaussianSigma(1, c.eps, c.delta)
			s, _ := AnalyticGaussianSigma(1, c.eps, c.delta)
			assert.Less(t, s, cl, "analytic must beat classical at ε=%g", c.eps)
		}
	}
}

func TestAnalyticGaussianExtremes(t *testing.T) {
	for _, eps := range []float64{1e-8, 1e-3, 1, 30, 300, 700, 2000} {
		for _, delta := range []float64{1e-300, 1e-30, 1e-6, 0.3, 0.99} {
			s, err := AnalyticGaussianSigma(1, eps, delta)
			require.NoError(t, err, "ε=%g δ=%g", eps, delta)
			require.True(t, s > 0 && !math.IsInf(s, 0))
			d := AnalyticGaussianDelta(1, s, eps)
			assert.LessOrEqual(t, d, delta*(1+1e-12), "ε=%g δ=%g σ=%g", eps, delta, s)
			assert.Greater(t, AnalyticGaussianDelta(1, s*(1-1e-9), eps), delta*(1-1e-6), "σ not minimal: ε=%g δ=%g", eps, delta)
		}
	}
}

func TestSigmaForRho(t *testing.T) {
	s, err := GaussianSigmaForRho(3, 0.5)
	require.NoError(t, err)
	assert.Equal(t, 3.0, s)
	assert.InDelta(t, 0.5, RhoOfGaussian(3, s), 1e-15)
	_, err = GaussianSigmaForRho(1, 0)
	assert.ErrorIs(t, err, ErrInvalidBudget)
	assert.Equal(t, 0.125, RhoOfExponential(1))
	assert.Equal(t, 0.5, RhoOfPure(1))
}
