package privacy

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// brNonAdaptiveDelta is the optimal δ(epsG) of k ε-bounded-range
// mechanisms composed non-adaptively (Dong, Durfee & Rogers 2020, Thm 3):
// the worst case is k copies of generalised randomized response whose
// privacy loss is t (probability q_t = (e^ε − e^t)/(e^ε − 1)) or t − ε,
// maximised over t ∈ [0, ε]; the maximum is at one of the points
// t_ℓ = (epsG + (ℓ+1)ε)/(k+1), ℓ = 0, …, k (clipped to [0, ε]).
func brNonAdaptiveDelta(epsG, eps float64, k int) float64 {
	at := func(t float64) float64 {
		q := (math.Exp(eps) - math.Exp(t)) / math.Expm1(eps)
		var d float64
		for i := 0; i <= k; i++ {
			loss := float64(k)*t - float64(k-i)*eps
			if loss <= epsG {
				continue
			}
			lc, _ := math.Lgamma(float64(k + 1))
			li, _ := math.Lgamma(float64(i + 1))
			lk, _ := math.Lgamma(float64(k - i + 1))
			logp := lc - li - lk
			if i > 0 {
				logp += float64(i) * math.Log(q)
			}
			if k-i > 0 {
				logp += float64(k-i) * math.Log1p(-q)
			}
			d += math.Exp(logp) * -math.Expm1(epsG-loss)
		}
		return d
	}
	best := 0.0
	for l := 0; l <= k; l++ {
		t := math.Min(math.Max((epsG+float64(l+1)*eps)/float64(k+1), 0), eps)
		best = math.Max(best, at(t))
	}
	return best
}

// brNonAdaptiveEpsilon is the smallest ε at δ of brNonAdaptiveDelta.
func brNonAdaptiveEpsilon(delta, eps float64, k int) float64 {
	lo, hi := 0.0, float64(k)*eps
	for range 100 {
		m := (lo + hi) / 2
		if brNonAdaptiveDelta(m, eps, k) > delta {
			lo = m
		} else {
			hi = m
		}
	}
	return hi
}

// The paper's optimal non-adaptive composition of k identical exponential
// mechanisms, against its values for the three cases, and dplr's
// accounting of the same steps, which must never state less (the
// optimal non-adaptive ε is a lower bound for any valid accounting) and
// stays within its note's bound of the profile it composes (issue 26 §5).
func TestExponentialStepsAgainstOptimalBoundedRangeComposition(t *testing.T) {
	tests := []struct {
		k            int
		eps, delta   float64
		optimal, gap float64 // the paper's ε at δ; dplr's ε − optimal at most
	}{
		{10, 0.1, 1e-5, 0.5547, 0.06},
		{10, 0.5, 1e-6, 3.5691, 0.25},
		{50, 0.2, 1e-6, 3.2797, 0.52},
	}
	for _, tc := range tests {
		opt := brNonAdaptiveEpsilon(tc.delta, tc.eps, tc.k)
		assert.InDelta(t, tc.optimal, opt, 1e-4, "k=%d ε=%v", tc.k, tc.eps)
		// k = 1: one ε-BR mechanism is ε-DP, and no better at δ = 0.
		assert.InDelta(t, tc.eps, brNonAdaptiveEpsilon(0, tc.eps, 1), 1e-9)

		var steps []Step
		for range tc.k {
			steps = append(steps, Step{Name: "q", Mechanism: MechExponential, Calibration: "pure", Epsilon: tc.eps})
		}
		got, ok := pldCandidate(steps, tc.delta)
		require.True(t, ok)
		assert.GreaterOrEqual(t, got.Epsilon, opt, "never below the optimal composition")
		assert.LessOrEqual(t, got.Epsilon-opt, tc.gap, "k=%d ε=%v: %v against %v", tc.k, tc.eps, got.Epsilon, opt)
	}
}
