package privacy

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func acctOf(t *testing.T, g Grant) *Accountant {
	t.Helper()
	a, err := NewAccountant(g)
	require.NoError(t, err)
	return a
}

// epsOf is the per-step ε of a share of p.
func epsOf(t *testing.T, p *Plan, s Share) float64 {
	t.Helper()
	b, err := p.Budget(s.Name)
	require.NoError(t, err)
	if b.Noise == NoisePure {
		return b.Epsilon
	}
	if s.Mechanism == MechExponential {
		return math.Sqrt(8 * b.Rho)
	}
	return math.Sqrt(2 * b.Rho)
}

// NewPurePlan keeps the pure split's proportions, scales them by one factor ≥ 1
// under noise=exact, falls back to the pure split when nothing better is
// certified, and refuses zcdp under a pure grant.
func TestNewPurePlan(t *testing.T) {
	approx := func(eps float64) Grant {
		return Grant{Kind: GrantApprox, Epsilon: eps, Delta: 1e-6}
	}
	amin := func(r int) []Share {
		return []Share{
			{Name: "clip", Weight: 0.1, Mechanism: MechExponential},
			{Name: "values", Weight: 0.9 / float64(r+1), Mechanism: MechLaplace},
			{Name: "vectors", Weight: 0.9 * float64(r) / float64(r+1), Steps: r, Mechanism: MechExponential},
		}
	}
	cases := []struct {
		name   string
		grant  Grant
		noise  string
		shares []Share
		used   string
		above1 bool
	}{
		{"many steps: exact beats pure", approx(1), NoiseExact, amin(10), NoiseExact, true},
		{"few steps", approx(1), NoiseExact, amin(1), "", false},
		{"pure grant", Grant{Kind: GrantPure, Epsilon: 1}, NoiseExact, amin(10), NoisePure, false},
		{"zcdp comparison", approx(1), NoiseZCDP, amin(10), NoiseZCDP, true},
		{"one exponential step", approx(1), NoiseExact, []Share{{Name: "frame", Weight: 1, Mechanism: MechExponential}}, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPurePlan(acctOf(t, tc.grant), tc.noise, tc.shares...)
			require.NoError(t, err)
			if tc.used != "" {
				assert.Equal(t, tc.used, p.Noise())
			}
			assert.GreaterOrEqual(t, p.Factor(), 1.0, "never below the pure split")
			if tc.above1 {
				assert.Greater(t, p.Factor(), 1.0)
			}
			for _, s := range tc.shares {
				pureEps := tc.grant.Epsilon * s.Weight / float64(max(s.Steps, 1))
				assert.InEpsilon(t, p.Factor(), epsOf(t, p, s)/pureEps, 1e-9, s.Name)
			}
			assert.NotEmpty(t, p.PureNote(tc.noise))
		})
	}
	_, err := NewPurePlan(acctOf(t, Grant{Kind: GrantPure, Epsilon: 1}), NoiseZCDP, amin(2)...)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrInvalidBudget, "refused as a request")
	_, err = NewPurePlan(acctOf(t, approx(1)), NoiseExact, Share{Name: "g", Weight: 1, Mechanism: MechGaussian})
	require.Error(t, err, "a Gaussian share is not a pure plan")
}
