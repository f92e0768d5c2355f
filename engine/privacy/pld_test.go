package privacy

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The GDP curve of one Gaussian step is the analytic Gaussian curve, and
// the calibration figures quoted in the accounting issue are reproduced.
func TestGDPClosedForms(t *testing.T) {
	for _, c := range []struct{ mu, eps float64 }{{0.3, 0.1}, {1, 1}, {2, 3}, {0.05, 0.5}} {
		assert.InDelta(t, AnalyticGaussianDelta(1, 1/c.mu, c.eps), GDPDelta(c.mu, c.eps), 1e-15)
	}
	// k identical steps compose to μ√k (StepsMu2 adds the lattice allowance).
	nine := make([]Step, 9)
	for i := range nine {
		nine[i] = Step{Mechanism: MechGaussian, Sensitivity: 0.7, Scale: 1}
	}
	mu2, ok := StepsMu2(nine)
	require.True(t, ok)
	assert.InEpsilon(t, 0.7*math.Sqrt(9), math.Sqrt(mu2), 1.1e-9, "up to the 1e-9 lattice allowance")
	assert.GreaterOrEqual(t, math.Sqrt(mu2), 0.7*math.Sqrt(9))

	mu, err := GDPMu(1, 1e-6)
	require.NoError(t, err)
	assert.InDelta(t, 4.2247, 1/mu, 5e-4, "σ/Δ at (1, 1e-6)")
	sigmaZ, err := GaussianSigmaForRho(1, mustRho(t, 1, 1e-6))
	require.NoError(t, err)
	assert.Less(t, 1/mu, sigmaZ*0.94, "GDP needs at least 6%% less noise than zCDP at (1, 1e-6)")

	for _, c := range []struct{ rho, want float64 }{{0.5, 4.8866}, {1.25, 8.3062}, {2, 10.9972}} {
		eps, err := GDPEpsilon(math.Sqrt(2*c.rho), 1e-6)
		require.NoError(t, err)
		assert.InDelta(t, c.want, eps, 1e-3)
		assert.Less(t, eps, EpsilonFromRho(c.rho, 1e-6), "the exact curve is below the zCDP conversion")
		// Round trip ε → μ → ε to 1e-9 relative.
		mu, err := GDPMu(eps, 1e-6)
		require.NoError(t, err)
		assert.InEpsilon(t, math.Sqrt(2*c.rho), mu, 1e-9)
	}
}

func mustRho(t *testing.T, eps, delta float64) float64 {
	t.Helper()
	r, err := RhoForEpsDelta(eps, delta)
	require.NoError(t, err)
	return r
}

// A Gaussian PLD agrees with the exact GDP curve within its stated
// discretisation error, always on the safe side.
func TestGaussianPLDAgainstGDP(t *testing.T) {
	for _, mu := range []float64{0.2, 1, 3} {
		for _, h := range []float64{1e-3, 1e-4} {
			p, err := roundUpGaussian(mu, h)
			require.NoError(t, err)
			assert.Less(t, p.Inf, 1e-20)
			for _, eps := range []float64{0, 0.5, 1, 2, 5} {
				exact := GDPDelta(mu, eps)
				got := p.Delta(eps)
				assert.GreaterOrEqual(t, got, exact*(1-1e-12), "μ=%v h=%v ε=%v: below the truth", mu, h, eps)
				assert.LessOrEqual(t, got, (GDPDelta(mu, eps-h)*(1+1e-9)+p.Inf)*(1+p.allowance())+1e-300, "μ=%v h=%v ε=%v: outside the stated error", mu, h, eps)
			}
		}
	}
}

// Laplace and randomized-response PLDs against their exact curves:
// Laplace δ(ε') = 1 − e^((ε'−ε)/2), RR δ(ε') = (e^ε − e^ε')/(1 + e^ε).
func TestPurePLDsClosedForm(t *testing.T) {
	const h = 1e-5
	for _, eps := range []float64{0.1, 1, 3} {
		lap, err := roundUpLaplace(eps, h)
		require.NoError(t, err)
		rr, err := roundUpPure(eps, h)
		require.NoError(t, err)
		for _, f := range []float64{0, 0.25, 0.5, 0.9, 1} {
			e := f * eps
			lexact := 1 - math.Exp((e-eps)/2)
			assert.GreaterOrEqual(t, lap.Delta(e), lexact-1e-12)
			assert.LessOrEqual(t, lap.Delta(e), 1-math.Exp((e-h-eps)/2)+1e-12)
			rexact := (math.Exp(eps) - math.Exp(e)) / (1 + math.Exp(eps))
			assert.GreaterOrEqual(t, rr.Delta(e), rexact-1e-12)
			assert.LessOrEqual(t, rr.Delta(e), (math.Exp(eps)-math.Exp(e-h))/(1+math.Exp(eps))+1e-12)
		}
		// Pure ε-DP: δ = 0 at ε (up to one grid step).
		assert.Zero(t, rr.Delta(eps+h))
		assert.Zero(t, lap.Delta(eps+h))
	}
}

// k-fold randomized response: the composed PLD matches Kairouz et al.'s
// optimal composition, δ(ε') = Σ_i C(k,i) p^(k−i) q^i (1 − e^(ε' − (k−2i)ε))₊.
func TestPureCompositionExact(t *testing.T) {
	const eps, h = 0.3, 1e-4
	for _, k := range []int{1, 2, 5, 10} {
		rr, err := roundUpPure(eps, h)
		require.NoError(t, err)
		p, err := rr.SelfCompose(k)
		require.NoError(t, err)
		assert.Equal(t, k, p.Factors)
		pp := 1 / (1 + math.Exp(-eps))
		for _, e := range []float64{0, 0.5, 1, 2} {
			var exact float64
			for i := 0; i <= k; i++ {
				l := float64(k-2*i) * eps
				if l > e {
					exact += binom(k, i) * math.Pow(pp, float64(k-i)) * math.Pow(1-pp, float64(i)) * -math.Expm1(e-l)
				}
			}
			got := p.Delta(e)
			assert.GreaterOrEqual(t, got, exact-1e-12, "k=%d ε'=%v", k, e)
			assert.LessOrEqual(t, got-exact, float64(k)*h*math.Exp(e)+1e-12, "k=%d ε'=%v", k, e)
		}
		assert.Zero(t, p.Delta(float64(k)*(eps+h)), "k pure steps are kε-DP")
	}
}

func binom(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}

// The PLD accountant on a Gaussian-only run agrees with the exact GDP
// curve within its stated error and never reports an ε below it; FFT and
// direct convolution agree.
func TestRunPLDGaussianOnly(t *testing.T) {
	steps := []Step{
		{Name: "a", Mechanism: MechGaussian, Sensitivity: 1, Scale: 2},
		{Name: "b", Mechanism: MechGaussian, Sensitivity: 0.5, Scale: 1.5},
		{Name: "c", Mechanism: MechGaussian, Sensitivity: 2, Scale: 3},
	}
	mu, ok, err := RunGDP(steps)
	require.NoError(t, err)
	require.True(t, ok)
	exact, err := GDPEpsilon(mu, 1e-6)
	require.NoError(t, err)
	p, err := RunPLD(steps, 1e-4)
	require.NoError(t, err)
	got, err := p.Epsilon(1e-6)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, got, exact*(1-1e-9))
	assert.LessOrEqual(t, got, exact+float64(p.Factors)*1e-4+1e-9)

	eps, method, err := tightEpsilon(steps, 1e-6)
	require.NoError(t, err)
	assert.Equal(t, MethodGDP, method)
	assert.InDelta(t, exact, eps, 1e-12)
}

func TestConvolutionFFTMatchesDirect(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	a := make([]float64, 3000)
	b := make([]float64, 5000)
	for i := range a {
		a[i] = r.Float64()
	}
	for i := range b {
		b[i] = r.Float64()
	}
	d, f := convolveDirect(a, b), convolveFFT(a, b)
	require.Len(t, f, len(d))
	for i := range d {
		assert.InDelta(t, d[i], f[i], 1e-9*d[i]+1e-9)
	}
}

// Property: on random mixed runs the tight ε is never above the zCDP
// figure dplr reports today, and never below the exact figure where one is
// known (pure-only runs: at most Σε).
func TestTightNeverWorseThanZCDP(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 25; trial++ {
		var steps []Step
		var rho, pureSum float64
		for i := 0; i < 1+r.IntN(4); i++ {
			switch r.IntN(3) {
			case 0:
				s := Step{Mechanism: MechGaussian, Sensitivity: 1, Scale: 1 + 5*r.Float64()}
				rho += RhoOfGaussian(s.Sensitivity, s.Scale)
				steps = append(steps, s)
			case 1:
				e := 0.05 + 0.5*r.Float64()
				steps = append(steps, Step{Mechanism: MechLaplace, Sensitivity: 1, Scale: 1 / e, Epsilon: e})
				rho += RhoOfPure(e)
				pureSum += e
			default:
				e := 0.05 + 0.5*r.Float64()
				steps = append(steps, Step{Mechanism: MechExponential, Sensitivity: 1, Scale: e / 2, Epsilon: e})
				rho += RhoOfPure(e)
				pureSum += e
			}
		}
		eps, _, err := tightEpsilon(steps, 1e-6)
		require.NoError(t, err)
		assert.LessOrEqual(t, eps, EpsilonFromRho(rho, 1e-6)+1e-9, "trial %d", trial)
		if rho == RhoOfPure(pureSum) || allPure(steps) {
			assert.LessOrEqual(t, eps, pureSum+float64(len(steps))*DefaultPLDGrid+1e-9)
		}
	}
}

func allPure(steps []Step) bool {
	for _, s := range steps {
		if s.Mechanism == MechGaussian {
			return false
		}
	}
	return true
}
