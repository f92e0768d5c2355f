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

func TestComposeForms(t *testing.T) {
	rhoCap, err := privacy.RhoForEpsDelta(1, 1e-6)
	require.NoError(t, err)
	tenth := Charge{Epsilon: 0.1, Rho: 0.005}
	tests := []struct {
		name    string
		total   privacy.Grant
		charges []Charge
		wantErr error
		comp    string
		eps     float64
		delta   float64
		rho     float64
	}{
		{"empty", pureG(1), nil, nil, "none", 0, 0, 0},
		{"pure sums", pureG(1), []Charge{{Epsilon: 0.25}, {Epsilon: 0.5}}, nil, "pure", 0.75, 0, 0},
		{"ten tenths fit one (rounding slack)", pureG(1), []Charge{tenth, tenth, tenth, tenth, tenth, tenth, tenth, tenth, tenth, tenth}, nil, "pure", 1, 0, 0},
		{"pure over", pureG(1), []Charge{{Epsilon: 0.75}, {Epsilon: 0.5}}, ErrBudgetExceeded, "", 0, 0, 0},
		{"approx charge on pure total", pureG(1), []Charge{{Epsilon: 0.1, Delta: 1e-9}}, ErrIncompatible, "", 0, 0, 0},
		{"rho-only charge on pure total", pureG(1), []Charge{{Rho: 0.01}}, ErrIncompatible, "", 0, 0, 0},
		{"zcdp sums", zcdpG(0.1), []Charge{{Rho: 0.05}, {Epsilon: 0.2, Rho: 0.02}}, nil, "zcdp", 0, 0, 0.07},
		{"zcdp over", zcdpG(0.1), []Charge{{Rho: 0.05}, {Rho: 0.06}}, ErrBudgetExceeded, "", 0, 0, 0},
		{"approx charge without rho on zcdp total", zcdpG(0.1), []Charge{{Epsilon: 0.1, Delta: 1e-9}}, ErrIncompatible, "", 0, 0, 0},
		{"approx basic", approxG(1, 1e-6), []Charge{{Epsilon: 0.5, Delta: 4e-7}, {Epsilon: 0.25, Delta: 5e-7}}, nil, "basic", 0.75, 9e-7, 0},
		{"approx basic delta over", approxG(1, 1e-6), []Charge{{Epsilon: 0.1, Delta: 6e-7}, {Epsilon: 0.1, Delta: 6e-7}}, ErrBudgetExceeded, "", 0, 0, 0},
		{"approx all pure", approxG(1, 1e-6), []Charge{{Epsilon: 0.25}, {Epsilon: 0.5}}, nil, "pure", 0.75, 0, 0},
		// Four ρ charges of a quarter of the cap: zCDP composition fits
		// exactly, where basic composition of their conversions would not.
		{"approx zcdp", approxG(1, 1e-6), []Charge{{Rho: rhoCap / 4}, {Rho: rhoCap / 4}, {Rho: rhoCap / 4}, {Rho: rhoCap / 4}}, nil, "zcdp", 1, 1e-6, rhoCap},
		{"approx zcdp over", approxG(1, 1e-6), []Charge{{Rho: rhoCap / 2}, {Rho: rhoCap * 0.51}}, ErrBudgetExceeded, "", 0, 0, 0},
		// A ρ-only charge next to an (ε, δ)-only one: no composition of the
		// privacy package covers both.
		{"approx rho-only with (ε, δ)-only", approxG(1, 1e-6), []Charge{{Rho: rhoCap / 4}, {Epsilon: 0.2, Delta: 1e-7}}, ErrIncompatible, "", 0, 0, 0},
		{"approx mixed", approxG(1, 1e-6), []Charge{{Rho: rhoCap / 4}, {Epsilon: 0.2}}, nil, "mixed",
			privacy.EpsilonFromRho(rhoCap/4, 1e-6) + 0.2, 1e-6, rhoCap / 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sp, err := Compose(tc.total, tc.charges)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.comp, sp.Composition)
			assert.InDelta(t, tc.eps, sp.Epsilon, 1e-9)
			assert.InDelta(t, tc.delta, sp.Delta, 1e-15)
			assert.InDelta(t, tc.rho, sp.Rho, 1e-12)
		})
	}
}

// Admission is the privacy package's composition of the charges as steps
// under the total as a grant, whatever their number: the ledger's four
// aggregated steps compose as the individual charges do.
func TestComposeIsPrivacyCompose(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	totals := []privacy.Grant{pureG(2), zcdpG(0.2), approxG(2, 1e-5)}
	for i := 0; i < 300; i++ {
		total := totals[i%3]
		var charges []Charge
		var steps []privacy.Step
		for j := 1 + r.IntN(8); j > 0; j-- {
			var c Charge
			switch r.IntN(4) {
			case 0:
				c = GrantCharge(pureG(0.4 * r.Float64()))
			case 1:
				c = GrantCharge(zcdpG(0.05 * r.Float64()))
			case 2:
				c = Charge{Epsilon: 0.4 * r.Float64(), Delta: 2e-6 * r.Float64(), Rho: 0.05 * r.Float64()}
			default:
				c = GrantCharge(approxG(0.4*r.Float64(), 2e-6*r.Float64()))
			}
			charges = append(charges, c)
			steps = append(steps, privacy.Step{Name: "run", Epsilon: c.Epsilon, Delta: c.Delta, Rho: c.Rho})
		}
		sp, err := Compose(total, charges)
		ach, aerr := privacy.Compose(total, steps)
		require.Equal(t, aerr == nil, err == nil, "case %d: ledger %v, privacy %v", i, err, aerr)
		if err == nil {
			assert.Equal(t, ach.Composition, sp.Composition, "case %d", i)
			assert.InDelta(t, ach.Epsilon, sp.Epsilon, 1e-12)
			assert.InDelta(t, ach.Rho, sp.Rho, 1e-12)
		}
	}
}

// For pure and ρ totals the ledger composes exactly as the per-run
// accountant does with steps of the same cost.
func TestComposeAgreesWithAccountant(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		n := 1 + r.IntN(6)
		var charges []Charge
		var steps []privacy.Step
		pure := r.IntN(2) == 0
		for j := 0; j < n; j++ {
			if pure {
				e := 0.3 * r.Float64()
				charges = append(charges, Charge{Epsilon: e})
				steps = append(steps, privacy.Step{Epsilon: e})
			} else {
				rho := 0.03 * r.Float64()
				charges = append(charges, Charge{Rho: rho})
				steps = append(steps, privacy.Step{Rho: rho})
			}
		}
		total := pureG(1)
		if !pure {
			total = zcdpG(0.1)
		}
		sp, err := Compose(total, charges)
		ach, aerr := privacy.Compose(total, steps)
		require.Equal(t, aerr == nil, err == nil, "case %d: ledger %v, accountant %v", i, err, aerr)
		if err == nil {
			assert.InDelta(t, ach.Epsilon, sp.Epsilon, 1e-12)
			assert.InDelta(t, ach.Rho, sp.Rho, 1e-12)
		}
	}
}

// Remaining is exact: a further grant of the reported size is accepted, and
// one 0.1% larger is refused.
func TestRemainingMatchesFits(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	totals := []privacy.Grant{pureG(2), zcdpG(0.2), approxG(2, 1e-5)}
	for i := 0; i < 300; i++ {
		total := totals[i%3]
		var s agg
		for j := r.IntN(4); j > 0; j-- {
			var c Charge
			switch total.Kind {
			case privacy.GrantPure:
				c = GrantCharge(pureG(0.3 * r.Float64()))
			case privacy.GrantZCDP:
				if r.IntN(2) == 0 {
					c = GrantCharge(zcdpG(0.04 * r.Float64()))
				} else {
					c = GrantCharge(pureG(0.2 * r.Float64()))
				}
			default:
				switch r.IntN(3) {
				case 0:
					c = GrantCharge(zcdpG(0.02 * r.Float64()))
				case 1:
					c = GrantCharge(approxG(0.3*r.Float64(), 2e-6*r.Float64()))
				default:
					c = GrantCharge(pureG(0.2 * r.Float64()))
				}
			}
			s.add(c)
		}
		if _, err := compose(total, s); err != nil {
			continue
		}
		st := Status{HasBudget: true, Total: total, charged: s}
		rem := remaining(total, s)
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

func TestGrantCharge(t *testing.T) {
	assert.Equal(t, Charge{Epsilon: 0.5, Rho: 0.125}, GrantCharge(pureG(0.5)))
	assert.Equal(t, Charge{Epsilon: 0.5, Delta: 1e-6}, GrantCharge(approxG(0.5, 1e-6)))
	assert.Equal(t, Charge{Rho: 0.02}, GrantCharge(zcdpG(0.02)))
	assert.True(t, Charge{}.IsZero())
	assert.False(t, math.IsNaN(GrantCharge(pureG(1)).Rho))
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
			GrantCharge(approxG(1, 1e-6)), "grant"},
		{"pure and Gaussian steps: mixed", approxG(1, 1e-6), []privacy.Step{pureStep(0.3), gauss(0.005)},
			Charge{Epsilon: 0.3 + privacy.EpsilonFromRho(0.005, 1e-6), Delta: 1e-6}, "mixed"},
		{"over the grant", pureG(1), []privacy.Step{pureStep(0.75), pureStep(0.5)}, GrantCharge(pureG(1)), "grant"},
		{"NaN cost", zcdpG(1), []privacy.Step{gauss(math.NaN())}, GrantCharge(zcdpG(1)), "grant"},
		{"a step that declares no cost", approxG(1, 1e-6), []privacy.Step{gauss(0.01), {Name: "free"}}, GrantCharge(approxG(1, 1e-6)), "grant"},
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
