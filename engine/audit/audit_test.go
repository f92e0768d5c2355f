package audit

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/privacy"
)

func TestClopperPearsonKnownValues(t *testing.T) {
	lo, hi, err := ClopperPearson(0, 10, 0.05)
	require.NoError(t, err)
	assert.Zero(t, lo)
	assert.InDelta(t, 1-math.Pow(0.025, 0.1), hi, 1e-9)
	lo, hi, err = ClopperPearson(5, 10, 0.05)
	require.NoError(t, err)
	assert.InDelta(t, 0.18709, lo, 1e-4)
	assert.InDelta(t, 0.81291, hi, 1e-4)
	_, _, err = ClopperPearson(11, 10, 0.05)
	assert.Error(t, err)
}

func gaussSamples(r *rand.Rand, n int, mean float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = mean + r.NormFloat64()
	}
	return x
}

// Validity: on a correctly calibrated Gaussian mechanism the lower bound
// never exceeds the true ε (over many seeds, at α = 0.05 at most a few
// percent may; with the exact mechanism none did in 40 trials).
func TestLowerBoundValidOnCalibratedGaussian(t *testing.T) {
	const mu, delta = 1.0, 1e-5
	truth, err := privacy.GDPEpsilon(mu, delta)
	require.NoError(t, err)
	over := 0
	for seed := uint64(0); seed < 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		b, err := EpsilonLowerBound(gaussSamples(r, 2000, 0), gaussSamples(r, 2000, mu), delta, 0.05)
		require.NoError(t, err)
		if b.Epsilon > truth {
			over++
		}
	}
	assert.LessOrEqual(t, over, 4, "a 95%% lower bound exceeded the truth in %d of 40 trials", over)
}

// Power: noise 5× too small (μ five times the claim) is flagged.
func TestLowerBoundCatchesNoiseTooSmall(t *testing.T) {
	const claimedMu, delta = 0.5, 1e-5
	claim, err := privacy.GDPEpsilon(claimedMu, delta)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(1, 2))
	b, err := EpsilonLowerBound(gaussSamples(r, 4000, 0), gaussSamples(r, 4000, 5*claimedMu), delta, 0.05)
	require.NoError(t, err)
	assert.Greater(t, b.Epsilon, claim, "lower bound %.3g vs claim %.3g", b.Epsilon, claim)
}

// The shift ratio covers the calibrated μ and detects a 20% sensitivity
// error with 2000 runs per data set.
func TestShiftRatio(t *testing.T) {
	covered := 0
	for seed := uint64(0); seed < 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 9))
		s, err := ShiftRatio(gaussSamples(r, 2000, 0), gaussSamples(r, 2000, 1), 0.05)
		require.NoError(t, err)
		if s.Low <= 1 && 1 <= s.High {
			covered++
		}
	}
	assert.GreaterOrEqual(t, covered, 36, "coverage %d/40", covered)

	r := rand.New(rand.NewPCG(5, 5))
	s, err := ShiftRatio(gaussSamples(r, 2000, 0), gaussSamples(r, 2000, 1.2), 0.05)
	require.NoError(t, err)
	assert.Greater(t, s.Low, 1.0, "a 20%% larger shift than calibrated is detected: %+v", s)
}

func TestBadInput(t *testing.T) {
	_, err := EpsilonLowerBound(make([]float64, 5), make([]float64, 50), 0, 0.05)
	assert.Error(t, err)
	x := make([]float64, 30)
	x[3] = math.NaN()
	_, err = EpsilonLowerBound(x, make([]float64, 30), 0, 0.05)
	assert.Error(t, err)
	_, err = ShiftRatio(make([]float64, 30), make([]float64, 30), 0.05)
	assert.Error(t, err, "no spread")
}

// The reach is the bound of a perfect test: two samples that never
// overlap give exactly Reach(runs), and RunsFor inverts it.
func TestReach(t *testing.T) {
	for _, tc := range []struct {
		runs  int
		delta float64
	}{{40, 0}, {600, 0}, {600, 1e-6}, {5000, 1e-5}} {
		a, b := make([]float64, tc.runs), make([]float64, tc.runs)
		for i := range b {
			b[i] = 1 // a is all 0: the test "statistic ≤ 0" never errs
		}
		got, err := EpsilonLowerBound(a, b, tc.delta, 0.05)
		require.NoError(t, err)
		assert.InDelta(t, Reach(tc.runs, tc.delta, 0.05), got.Epsilon, 1e-9, "runs %d", tc.runs)
		assert.InDelta(t, got.Reach, got.Epsilon, 1e-9)
		n := RunsFor(got.Epsilon, tc.delta, 0.05)
		assert.LessOrEqual(t, Reach(n-1, tc.delta, 0.05), got.Epsilon)
		assert.Greater(t, Reach(n, tc.delta, 0.05), got.Epsilon)
	}
	// the figure the audit's users were given: 600 runs cannot certify 3.7
	assert.InDelta(t, 4.39, Reach(600, 1e-6, 0.05), 0.01)
	assert.Less(t, Reach(300, 1e-6, 0.05), 3.7)
	assert.Zero(t, Reach(1, 0.9, 0.05), "one run cannot beat δ = 0.9")
	assert.Zero(t, Reach(0, 0, 0.05))
}
