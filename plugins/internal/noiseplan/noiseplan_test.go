package noiseplan

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

func run(t *testing.T, g privacy.Grant) *sdk.Run {
	t.Helper()
	a, err := privacy.NewAccountant(g)
	require.NoError(t, err)
	return &sdk.Run{Acct: a}
}

// epsOf is the per-step ε of a share of p.
func epsOf(t *testing.T, p *Plan, s privacy.Share) float64 {
	t.Helper()
	b, err := p.Budget(s.Name)
	require.NoError(t, err)
	if b.Noise == privacy.NoisePure {
		return b.Epsilon
	}
	if s.Mechanism == privacy.MechExponential {
		return math.Sqrt(8 * b.Rho)
	}
	return math.Sqrt(2 * b.Rho)
}

// New keeps the pure split's proportions, scales them by one factor ≥ 1
// under noise=exact, falls back to the pure split when nothing better is
// certified, and refuses zcdp under a pure grant.
func TestNew(t *testing.T) {
	approx := func(eps float64) privacy.Grant {
		return privacy.Grant{Kind: privacy.GrantApprox, Epsilon: eps, Delta: 1e-6}
	}
	amin := func(r int) []privacy.Share {
		return []privacy.Share{
			{Name: "clip", Weight: 0.1, Mechanism: privacy.MechExponential},
			{Name: "values", Weight: 0.9 / float64(r+1), Mechanism: privacy.MechLaplace},
			{Name: "vectors", Weight: 0.9 * float64(r) / float64(r+1), Steps: r, Mechanism: privacy.MechExponential},
		}
	}
	cases := []struct {
		name   string
		grant  privacy.Grant
		noise  string
		shares []privacy.Share
		used   string
		above1 bool
	}{
		{"many steps: exact beats pure", approx(1), privacy.NoiseExact, amin(10), privacy.NoiseExact, true},
		{"few steps", approx(1), privacy.NoiseExact, amin(1), "", false},
		{"pure grant", privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1}, privacy.NoiseExact, amin(10), privacy.NoisePure, false},
		{"zcdp comparison", approx(1), privacy.NoiseZCDP, amin(10), privacy.NoiseZCDP, true},
		{"one exponential step", approx(1), privacy.NoiseExact, []privacy.Share{{Name: "frame", Weight: 1, Mechanism: privacy.MechExponential}}, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(run(t, tc.grant), tc.noise, tc.shares...)
			require.NoError(t, err)
			if tc.used != "" {
				assert.Equal(t, tc.used, p.Used)
			}
			assert.GreaterOrEqual(t, p.Factor, 1.0, "never below the pure split")
			if tc.above1 {
				assert.Greater(t, p.Factor, 1.0)
			}
			for _, s := range tc.shares {
				pureEps := tc.grant.Epsilon * s.Weight / float64(max(s.Steps, 1))
				assert.InEpsilon(t, p.Factor, epsOf(t, p, s)/pureEps, 1e-9, s.Name)
			}
			assert.NotEmpty(t, p.Note(tc.noise))
		})
	}
	_, err := New(run(t, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1}), privacy.NoiseZCDP, amin(2)...)
	require.Error(t, err)
	assert.True(t, sdk.IsBadRequest(err), "refused as a request")
	_, err = New(run(t, approx(1)), privacy.NoiseExact, privacy.Share{Name: "g", Weight: 1, Mechanism: privacy.MechGaussian})
	require.Error(t, err, "a Gaussian share is not a pure plan")
}
