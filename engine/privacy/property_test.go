package privacy

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// No accountant reports an ε below the exact curve where one is known.
// For random Gaussian-only runs (1–12 steps of random sensitivity and
// scale, random δ) the exact curve is the Gaussian-DP one at
// μ = sqrt(Σ (Δ_i/σ_i)²) (Dong, Roth & Su 2022, Cor. 3.3); the zCDP
// conversion, the "gdp" accounting (with its lattice allowance), the
// pessimistic PLD and the tightest composition Certify states must all lie
// on or above it.
func TestNoAccountantBelowExactCurve(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 1))
	for trial := 0; trial < 60; trial++ {
		k := 1 + rng.IntN(12)
		delta := math.Pow(10, -3-7*rng.Float64())
		var steps []Step
		var sum, rho float64
		for i := 0; i < k; i++ {
			sens := 0.1 + rng.Float64()
			sigma := sens * (1 + 20*rng.Float64())
			r := RhoOfGaussian(sens, sigma)
			steps = append(steps, Step{Name: "g", Mechanism: MechGaussian, Sensitivity: sens, Scale: sigma, Rho: r})
			sum += (sens / sigma) * (sens / sigma)
			rho += r
		}
		exact, err := GDPEpsilon(math.Sqrt(sum), delta)
		require.NoError(t, err)
		floor := exact * (1 - 1e-9)

		zc := EpsilonFromRho(rho, delta)
		assert.GreaterOrEqual(t, zc, floor, "zCDP, trial %d", trial)
		tight, method, err := tightEpsilon(steps, delta)
		require.NoError(t, err)
		assert.Equal(t, MethodGDP, method)
		assert.GreaterOrEqual(t, tight, floor, "gdp, trial %d", trial)
		p, err := RunPLD(steps, DefaultPLDGrid)
		require.NoError(t, err)
		pe, err := p.Epsilon(delta)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, pe, floor, "pld, trial %d", trial)
		// A grant large enough for every accounting: Certify's figure.
		g := Grant{Kind: GrantApprox, Epsilon: 2*zc + 1, Delta: delta}
		cert, err := Certify(Guarantee{Kind: Approx}, g, steps)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, cert.Epsilon, floor, "certified, trial %d", trial)
		assert.InDelta(t, exact, cert.Epsilon, exact*1e-6+1e-9, "the certified ε is the exact one up to the lattice allowance")
	}
}

// The default (noise=exact) never needs more noise than zCDP did: for
// random (ε, δ) grants and random plans (Gaussian-only, or with a Laplace
// or exponential share), every share's per-step ρ under NoiseExact is at
// least its ρ under NoiseZCDP (σ ∝ 1/√ρ, b ∝ 1/√(2ρ), β ∝ √ρ); and the
// exact plan's steps, spent, still meet the grant.
func TestExactNeverMoreNoiseThanZCDP(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 2))
	mechs := []Mechanism{MechGaussian, MechGaussian, MechLaplace, MechExponential}
	for trial := 0; trial < 40; trial++ {
		g := Grant{Kind: GrantApprox, Epsilon: math.Pow(10, -1+2*rng.Float64()), Delta: math.Pow(10, -3-6*rng.Float64())}
		n := 1 + rng.IntN(3)
		shares := make([]Share, n)
		w := 1.0
		for i := range shares {
			m := MechGaussian
			if i > 0 {
				m = mechs[rng.IntN(len(mechs))]
			}
			wi := w
			if i < n-1 {
				wi = w * (0.2 + 0.6*rng.Float64())
			}
			w -= wi
			shares[i] = Share{Name: string(rune('a' + i)), Weight: wi, Steps: 1 + rng.IntN(5), Mechanism: m}
		}
		az, _ := NewAccountant(g)
		pz, err := NewPlan(az, NoiseZCDP, shares...)
		require.NoError(t, err)
		ae, _ := NewAccountant(g)
		pe, err := NewPlan(ae, NoiseExact, shares...)
		require.NoError(t, err)
		for _, s := range shares {
			bz, err := pz.Budget(s.Name)
			require.NoError(t, err)
			be, err := pe.Budget(s.Name)
			require.NoError(t, err)
			assert.GreaterOrEqual(t, be.Rho, bz.Rho*(1-1e-12), "trial %d share %s (%s): exact ρ %.6g < zCDP ρ %.6g", trial, s.Name, s.Mechanism, be.Rho, bz.Rho)
		}
		spendPlan(t, ae, pe)
		assert.LessOrEqual(t, ae.Achieved().Epsilon, g.Epsilon*(1+1e-9), "trial %d: the exact plan meets its grant", trial)
	}
}
