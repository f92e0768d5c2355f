package privacy

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVerifyStepAcceptsWhatTheAccountantDeclares: every step the Spend
// helpers declare verifies, at small and large budgets, so the host can
// verify each step a well-behaved plugin reports.
func TestVerifyStepAcceptsWhatTheAccountantDeclares(t *testing.T) {
	for _, scale := range []float64{1e-4, 0.3, 1, 7} {
		acct, err := NewAccountant(Grant{Kind: GrantApprox, Epsilon: 1e3, Delta: 0.5})
		require.NoError(t, err)
		_, err = acct.SpendGaussianRho("rho", 2.5, 10, scale/10)
		require.NoError(t, err)
		_, err = acct.SpendGaussianEpsDelta("analytic", 1, 3, scale, 1e-6, "analytic")
		require.NoError(t, err)
		_, err = acct.SpendGaussianEpsDelta("classical", 1, 3, math.Min(scale, 1), 1e-6, "classical")
		require.NoError(t, err)
		_, err = acct.SpendLaplace("laplace", 0.5, 4, scale)
		require.NoError(t, err)
		_, err = acct.SpendExponential("exp", 3, scale)
		require.NoError(t, err)
		_, err = acct.ExponentialMonotone("monotone", 3, Budget{Noise: NoisePure, Epsilon: scale})
		require.NoError(t, err)
		_, err = acct.Gaussian("release-rho", 2, 5, Budget{Noise: NoiseZCDP, Rho: scale / 10})
		require.NoError(t, err)
		_, err = acct.Gaussian("release-analytic", 2, 5, Budget{Noise: NoiseAnalytic, Epsilon: scale, Delta: 1e-7})
		require.NoError(t, err)
		_, err = acct.Gaussian("release-classical", 2, 5, Budget{Noise: NoiseClassical, Epsilon: math.Min(scale, 1), Delta: 1e-7})
		require.NoError(t, err)
		_, err = acct.Laplace("release-laplace", 2, 5, Budget{Noise: NoisePure, Epsilon: scale})
		require.NoError(t, err)
		_, err = acct.Exponential("release-exp", 2, Budget{Noise: NoisePure, Epsilon: scale})
		require.NoError(t, err)
		for _, s := range acct.Steps() {
			assert.NoError(t, VerifyStep(s), "%+v", s)
		}
	}
}

func TestVerifyStepRefusesCostsTheNoiseDoesNotImply(t *testing.T) {
	gauss := Step{Name: "g", Mechanism: MechGaussian, Calibration: "zcdp", Sensitivity: 1, Scale: 1, Rho: 0.5}
	lap := Step{Name: "l", Mechanism: MechLaplace, Calibration: "pure", Sensitivity: 1, Scale: 1, Epsilon: 1, Rho: 0.5}
	expo := Step{Name: "e", Mechanism: MechExponential, Calibration: "pure", Sensitivity: 1, Scale: 0.5, Epsilon: 1, Rho: 0.125}
	sigma, err := AnalyticGaussianSigma(1, 1, 1e-6)
	require.NoError(t, err)
	analytic := Step{Name: "a", Mechanism: MechGaussian, Calibration: "analytic", Sensitivity: 1, Scale: sigma * 1.000001, Epsilon: 1, Delta: 1e-6}
	for _, ok := range []Step{gauss, lap, expo, analytic} {
		require.NoError(t, VerifyStep(ok), "the honest version of %q verifies", ok.Name)
	}
	with := func(s Step, f func(*Step)) Step { f(&s); return s }
	cases := []struct {
		name string
		step Step
		want string
	}{
		{"gaussian ρ below Δ²/2σ²", with(gauss, func(s *Step) { s.Rho = 0.01 }), "ρ = Δ²/(2σ²)"},
		{"gaussian scale larger than claimed", with(gauss, func(s *Step) { s.Sensitivity = 10 }), "ρ = Δ²/(2σ²)"},
		{"gaussian δ below the analytic curve", with(analytic, func(s *Step) { s.Scale = sigma * 0.9 }), "only for δ ≥"},
		{"gaussian ε understated", with(analytic, func(s *Step) { s.Epsilon = 1e-6 }), "only for δ ≥"},
		{"gaussian claimed pure", with(analytic, func(s *Step) { s.Delta = 0 }), "cannot be pure"},
		{"laplace ε below Δ/b", with(lap, func(s *Step) { s.Epsilon = 1e-6 }), "costs ε = 1"},
		{"laplace ρ below ε²/2", with(lap, func(s *Step) { s.Rho = 0.01 }), "costs ρ = 0.5"},
		{"exponential β above ε/(2Δ)", with(expo, func(s *Step) { s.Scale = 5 }), "costs ε = 10"},
		{"exponential ρ below ε²/8", with(expo, func(s *Step) { s.Rho = 1e-3 }), "costs ρ = 0.125"},
		{"monotone β above ε/Δ", with(expo, func(s *Step) { s.Calibration, s.Scale = CalibMonotone, 2 }), "costs ε = 2"},
		{"general β = ε/Δ claimed without monotonicity", with(expo, func(s *Step) { s.Scale = 1 }), "costs ε = 2"},
		{"unknown mechanism", with(gauss, func(s *Step) { s.Mechanism = "randomized-response" }), "unknown mechanism"},
		{"no scale", with(gauss, func(s *Step) { s.Scale = 0 }), "positive and finite"},
		{"infinite scale", with(lap, func(s *Step) { s.Scale = math.Inf(1) }), "positive and finite"},
		{"no sensitivity", with(lap, func(s *Step) { s.Sensitivity = 0 }), "positive and finite"},
		{"no cost", with(lap, func(s *Step) { s.Epsilon, s.Rho = 0, 0 }), "no privacy cost"},
		{"query sensitivity above the calibrated one", with(gauss, func(s *Step) { s.QuerySensitivity = 2 }), "below the query's"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifyStep(tc.step)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrUnverifiable)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestVerifyStepSlack: a cost short of the implied one by float rounding
// passes; short by more than the accountant's slack does not.
func TestVerifyStepSlack(t *testing.T) {
	s := Step{Name: "g", Mechanism: MechGaussian, Sensitivity: 1, Scale: 1, Rho: 0.5 * (1 - 1e-15)}
	assert.NoError(t, VerifyStep(s))
	s.Rho = 0.5 * (1 - 1e-9)
	assert.ErrorIs(t, VerifyStep(s), ErrUnverifiable)
}

func BenchmarkVerifyStep(b *testing.B) {
	sigma, err := AnalyticGaussianSigma(1, 1, 1e-6)
	if err != nil {
		b.Fatal(err)
	}
	steps := []Step{
		{Name: "rho", Mechanism: MechGaussian, Sensitivity: 1, Scale: 1, Rho: 0.5},
		{Name: "analytic", Mechanism: MechGaussian, Sensitivity: 1, Scale: sigma * 1.000001, Epsilon: 1, Delta: 1e-6},
		{Name: "laplace", Mechanism: MechLaplace, Sensitivity: 1, Scale: 1, Epsilon: 1},
	}
	for i := 0; i < b.N; i++ {
		for _, s := range steps {
			if err := VerifyStep(s); err != nil {
				b.Fatal(err)
			}
		}
	}
}
