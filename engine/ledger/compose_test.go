package ledger

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/privacy"
)

func pureG(eps float64) privacy.Grant { return privacy.Grant{Kind: privacy.GrantPure, Epsilon: eps} }
func approxG(eps, delta float64) privacy.Grant {
	return privacy.Grant{Kind: privacy.GrantApprox, Epsilon: eps, Delta: delta}
}
func zcdpG(rho float64) privacy.Grant { return privacy.Grant{Kind: privacy.GrantZCDP, Rho: rho} }

// Remaining is exact: a further grant of the reported size is accepted, and
// one 0.1% larger is refused.
func TestRemainingMatchesFits(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	totals := []privacy.Grant{pureG(2), zcdpG(0.2), approxG(2, 1e-5)}
	for i := 0; i < 300; i++ {
		total := totals[i%3]
		var s privacy.Tally
		for j := r.IntN(4); j > 0; j-- {
			var c Charge
			switch total.Kind {
			case privacy.GrantPure:
				c = privacy.GrantCharge(pureG(0.3 * r.Float64()))
			case privacy.GrantZCDP:
				if r.IntN(2) == 0 {
					c = privacy.GrantCharge(zcdpG(0.04 * r.Float64()))
				} else {
					c = privacy.GrantCharge(pureG(0.2 * r.Float64()))
				}
			default:
				switch r.IntN(3) {
				case 0:
					c = privacy.GrantCharge(zcdpG(0.02 * r.Float64()))
				case 1:
					c = privacy.GrantCharge(approxG(0.3*r.Float64(), 2e-6*r.Float64()))
				default:
					c = privacy.GrantCharge(pureG(0.2 * r.Float64()))
				}
			}
			s.Add(c)
		}
		if _, err := compose(total, s); err != nil {
			continue
		}
		st := Status{HasBudget: true, Total: total, charged: s}
		rem := privacy.RemainingOf(total, s)
		check := func(g privacy.Grant, scaled privacy.Grant) {
			require.NoError(t, st.Fits(g), "case %d: remaining %+v of %+v", i, rem, total)
			require.ErrorIs(t, st.Fits(scaled), ErrBudgetExceeded, "case %d", i)
		}
		switch total.Kind {
		case privacy.GrantPure:
			if rem.Epsilon > 1e-6 {
				check(pureG(rem.Epsilon), pureG(rem.Epsilon*1.001))
			}
		case privacy.GrantZCDP:
			if rem.Rho > 1e-6 {
				check(zcdpG(rem.Rho), zcdpG(rem.Rho*1.001))
			}
		default:
			if rem.Rho > 1e-6 {
				check(zcdpG(rem.Rho), zcdpG(rem.Rho*1.001))
			}
			if rem.Epsilon > 1e-6 && rem.Delta > 0 {
				require.NoError(t, st.Fits(approxG(rem.Epsilon, rem.Delta)), "case %d", i)
			}
		}
	}
}

// A run's charge is the privacy package's composition of its steps; a
// step that declares no cost, or steps beyond the grant, give the grant.
func TestSuccessChargeFromSteps(t *testing.T) {
	gauss := func(rho float64) privacy.Step {
		return privacy.Step{Name: "g", Mechanism: privacy.MechGaussian, Rho: rho}
	}
	classical := func(eps, delta, rho float64) privacy.Step {
		return privacy.Step{Name: "c", Mechanism: privacy.MechGaussian, Epsilon: eps, Delta: delta, Rho: rho}
	}
	rhoCap, err := privacy.RhoForEpsDelta(1, 1e-6)
	require.NoError(t, err)
	tests := []struct {
		name  string
		g     privacy.Grant
		steps []privacy.Step
		want  Charge
		basis string
	}{
		{"pure steps", pureG(1), []privacy.Step{pureStep(0.25), {Epsilon: 0.25, Rho: 0.25 * 0.25 / 8}},
			Charge{Epsilon: 0.5, Rho: 0.125}, "pure"},
		{"zcdp steps", zcdpG(0.1), []privacy.Step{gauss(0.02), gauss(0.03)}, Charge{Rho: 0.05}, "zcdp"},
		{"no steps", approxG(1, 1e-6), []privacy.Step{}, Charge{}, "none"},
		{"rho-only steps under (ε, δ)", approxG(1, 1e-6), []privacy.Step{gauss(rhoCap / 2)},
			Charge{Epsilon: privacy.EpsilonFromRho(rhoCap/2, 1e-6), Delta: 1e-6, Rho: rhoCap / 2}, "zcdp"},
		{"classical steps: basic is tighter", approxG(1, 1e-6), []privacy.Step{classical(0.1, 1e-7, 0.5)},
			Charge{Epsilon: 0.1, Delta: 1e-7}, "basic"},
		{"mixed statements", approxG(1, 1e-6), []privacy.Step{gauss(10), {Name: "x", Epsilon: 0.5, Delta: 1e-7}},
			privacy.GrantCharge(approxG(1, 1e-6)), "grant"},
		{"pure and Gaussian steps: mixed", approxG(1, 1e-6), []privacy.Step{pureStep(0.3), gauss(0.005)},
			Charge{Epsilon: 0.3 + privacy.EpsilonFromRho(0.005, 1e-6), Delta: 1e-6}, "mixed"},
		{"over the grant", pureG(1), []privacy.Step{pureStep(0.75), pureStep(0.5)}, privacy.GrantCharge(pureG(1)), "grant"},
		{"NaN cost", zcdpG(1), []privacy.Step{gauss(math.NaN())}, privacy.GrantCharge(zcdpG(1)), "grant"},
		{"a step that declares no cost", approxG(1, 1e-6), []privacy.Step{gauss(0.01), {Name: "free"}}, privacy.GrantCharge(approxG(1, 1e-6)), "grant"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, basis, _ := successCharge(tc.g, Outcome{Status: Succeeded, Steps: tc.steps})
			assert.Equal(t, tc.basis, basis)
			assert.InDelta(t, tc.want.Epsilon, c.Epsilon, 1e-12)
			assert.InDelta(t, tc.want.Delta, c.Delta, 1e-18)
			assert.InDelta(t, tc.want.Rho, c.Rho, 1e-12)
		})
	}
}

// From a composed Achieved, a ρ is recorded only when it covers the whole
// run ("zcdp", or pure ε²/2): the accountant's "mixed" ρ covers only the
// non-pure steps.
func TestAchievedCharge(t *testing.T) {
	g := approxG(1, 1e-6)
	tests := []struct {
		name string
		ach  privacy.Achieved
		want Charge
	}{
		{"zcdp", privacy.Achieved{Epsilon: 0.8, Delta: 1e-6, Rho: 0.01, Composition: "zcdp"}, Charge{Epsilon: 0.8, Delta: 1e-6, Rho: 0.01}},
		{"mixed", privacy.Achieved{Epsilon: 0.8, Delta: 1e-6, Rho: 0.005, Composition: "mixed"}, Charge{Epsilon: 0.8, Delta: 1e-6}},
		{"basic", privacy.Achieved{Epsilon: 0.5, Delta: 1e-7, Composition: "basic"}, Charge{Epsilon: 0.5, Delta: 1e-7}},
		{"pure", privacy.Achieved{Epsilon: 0.5, Composition: "pure"}, Charge{Epsilon: 0.5, Rho: 0.125}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ach := tc.ach
			c, basis, _ := successCharge(g, Outcome{Status: Succeeded, Achieved: &ach})
			assert.Equal(t, tc.want, c)
			assert.Equal(t, tc.ach.Composition, basis)
		})
	}
}
