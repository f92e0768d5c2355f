package privacy

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mathext"
)

func pureG(eps float64) Grant { return Grant{Kind: GrantPure, Epsilon: eps} }
func approxG(eps, delta float64) Grant {
	return Grant{Kind: GrantApprox, Epsilon: eps, Delta: delta}
}
func zcdpG(rho float64) Grant { return Grant{Kind: GrantZCDP, Rho: rho} }

func TestComposeForms(t *testing.T) {
	rhoCap, err := RhoForEpsDelta(1, 1e-6)
	require.NoError(t, err)
	tenth := Charge{Epsilon: 0.1, Rho: 0.005}
	tests := []struct {
		name    string
		total   Grant
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
		{"pure over", pureG(1), []Charge{{Epsilon: 0.75}, {Epsilon: 0.5}}, ErrOverBudget, "", 0, 0, 0},
		{"approx charge on pure total", pureG(1), []Charge{{Epsilon: 0.1, Delta: 1e-9}}, ErrIncompatible, "", 0, 0, 0},
		{"rho-only charge on pure total", pureG(1), []Charge{{Rho: 0.01}}, ErrIncompatible, "", 0, 0, 0},
		{"zcdp sums", zcdpG(0.1), []Charge{{Rho: 0.05}, {Epsilon: 0.2, Rho: 0.02}}, nil, "zcdp", 0, 0, 0.07},
		{"zcdp over", zcdpG(0.1), []Charge{{Rho: 0.05}, {Rho: 0.06}}, ErrOverBudget, "", 0, 0, 0},
		{"approx charge without rho on zcdp total", zcdpG(0.1), []Charge{{Epsilon: 0.1, Delta: 1e-9}}, ErrIncompatible, "", 0, 0, 0},
		{"approx basic", approxG(1, 1e-6), []Charge{{Epsilon: 0.5, Delta: 4e-7}, {Epsilon: 0.25, Delta: 5e-7}}, nil, "basic", 0.75, 9e-7, 0},
		{"approx basic delta over", approxG(1, 1e-6), []Charge{{Epsilon: 0.1, Delta: 6e-7}, {Epsilon: 0.1, Delta: 6e-7}}, ErrOverBudget, "", 0, 0, 0},
		{"approx all pure", approxG(1, 1e-6), []Charge{{Epsilon: 0.25}, {Epsilon: 0.5}}, nil, "pure", 0.75, 0, 0},
		// Four ρ charges of a quarter of the cap: zCDP composition fits
		// exactly, where basic composition of their conversions would not.
		{"approx zcdp", approxG(1, 1e-6), []Charge{{Rho: rhoCap / 4}, {Rho: rhoCap / 4}, {Rho: rhoCap / 4}, {Rho: rhoCap / 4}}, nil, "zcdp", 1, 1e-6, rhoCap},
		{"approx zcdp over", approxG(1, 1e-6), []Charge{{Rho: rhoCap / 2}, {Rho: rhoCap * 0.51}}, ErrOverBudget, "", 0, 0, 0},
		// A ρ-only charge next to an (ε, δ)-only one: no composition of the
		// privacy package covers both.
		{"approx rho-only with (ε, δ)-only", approxG(1, 1e-6), []Charge{{Rho: rhoCap / 4}, {Epsilon: 0.2, Delta: 1e-7}}, ErrIncompatible, "", 0, 0, 0},
		{"approx mixed", approxG(1, 1e-6), []Charge{{Rho: rhoCap / 4}, {Epsilon: 0.2}}, nil, "mixed",
			EpsilonFromRho(rhoCap/4, 1e-6) + 0.2, 1e-6, rhoCap / 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sp, err := composeCharges(tc.total, tc.charges)
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
	totals := []Grant{pureG(2), zcdpG(0.2), approxG(2, 1e-5)}
	for i := 0; i < 300; i++ {
		total := totals[i%3]
		var charges []Charge
		var steps []Step
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
			steps = append(steps, Step{Name: "run", Epsilon: c.Epsilon, Delta: c.Delta, Rho: c.Rho})
		}
		sp, err := composeCharges(total, charges)
		ach, aerr := Compose(total, steps)
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
		var steps []Step
		pure := r.IntN(2) == 0
		for j := 0; j < n; j++ {
			if pure {
				e := 0.3 * r.Float64()
				charges = append(charges, Charge{Epsilon: e})
				steps = append(steps, Step{Epsilon: e})
			} else {
				rho := 0.03 * r.Float64()
				charges = append(charges, Charge{Rho: rho})
				steps = append(steps, Step{Rho: rho})
			}
		}
		total := pureG(1)
		if !pure {
			total = zcdpG(0.1)
		}
		sp, err := composeCharges(total, charges)
		ach, aerr := Compose(total, steps)
		require.Equal(t, aerr == nil, err == nil, "case %d: ledger %v, accountant %v", i, err, aerr)
		if err == nil {
			assert.InDelta(t, ach.Epsilon, sp.Epsilon, 1e-12)
			assert.InDelta(t, ach.Rho, sp.Rho, 1e-12)
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

// The filter's rule on aggregates: undecided histories must fit both
// rules, a decided one follows its own.
func TestComposeFilterModes(t *testing.T) {
	total := approxG(1, 1e-6)
	muT, _ := GDPMu(1, 1e-6)
	rhoCap, _ := RhoForEpsDelta(1, 1e-6)
	gauss := func(rho float64) Charge { return Charge{Rho: rho, Mu2: 2 * rho} }
	var a Tally
	a.Add(gauss(rhoCap))
	a.Add(gauss((muT*muT/2 - rhoCap) * 0.9))
	_, err := ComposeTally(total, a)
	require.ErrorIs(t, err, ErrOverBudget, "undecided: the classic rule must admit too")
	a.Filter = FilterGDP
	sp, err := ComposeTally(total, a)
	require.NoError(t, err)
	assert.Equal(t, "gdp", sp.Composition)
	assert.Less(t, sp.Epsilon, 1.0)
	a.Add(Charge{Epsilon: 0.01})
	_, err = ComposeTally(total, a)
	require.ErrorIs(t, err, ErrIncompatible)
	a.Filter = FilterClassic
	_, err = ComposeTally(total, a)
	require.ErrorIs(t, err, ErrOverBudget)
}

func phi(x float64) float64    { return 0.5 * math.Erfc(-x/math.Sqrt2) }
func phiInv(p float64) float64 { return mathext.NormalQuantile(p) }

// gaussTradeoff is G_μ(α) = Φ(Φ⁻¹(1 − α) − μ), with Φ⁻¹(1 − α) taken as
// −Φ⁻¹(α) for small α (1 − α would round to 1).
func gaussTradeoff(mu, alpha float64) float64 {
	if alpha < 0.5 {
		return phi(-phiInv(alpha) - mu)
	}
	return phi(phiInv(1-alpha) - mu)
}

// pureTradeoff is f_ε(α) = max(0, 1 − e^ε α, e^{−ε}(1 − α)).
func pureTradeoff(eps, alpha float64) float64 {
	return math.Max(0, math.Max(1-math.Exp(eps)*alpha, math.Exp(-eps)*(1-alpha)))
}

// μ_ε = 2Φ⁻¹(e^ε/(1+e^ε)) is an ε-DP run's GDP parameter: the Gaussian
// trade-off curve lies below the ε-DP one everywhere (on a grid of α,
// denser near 0 and 1), touches it at the kink α* = 1/(1+e^ε) (so no
// smaller μ holds), behaves as √(π/2)·ε for small ε, and pureEpsilonForMu
// inverts it.
func TestPureMuIsTheTightGDPOfEpsDP(t *testing.T) {
	for _, eps := range []float64{1e-4, 0.01, 0.1, 0.5, 1, 2, 5, 10, 30} {
		mu := PureMu(eps)
		for i := 1; i < 2000; i++ {
			for _, a := range []float64{float64(i) / 2000, math.Pow(10, -float64(i)/100), 1 - math.Pow(10, -float64(i)/100)} {
				if a <= 0 || a >= 1 {
					continue
				}
				g, f := gaussTradeoff(mu, a), pureTradeoff(eps, a)
				require.LessOrEqual(t, g, f+1e-12, "ε = %g, α = %g: G_μ = %g > f_ε = %g", eps, a, g, f)
			}
		}
		star := 1 / (1 + math.Exp(eps))
		assert.InEpsilon(t, star, gaussTradeoff(mu, star), 1e-6, "tight at the kink (ε = %g)", eps)
		assert.Greater(t, gaussTradeoff(mu*(1-1e-6), star), star, "a smaller μ fails (ε = %g)", eps)
		back := PureEpsilonForMu(mu)
		assert.LessOrEqual(t, PureMu(back), mu)
		assert.InDelta(t, eps, back, 1e-7*eps)
	}
	assert.InDelta(t, math.Sqrt(math.Pi/2)*1e-3, PureMu(1e-3), 1e-9)
	assert.InDelta(t, 1.23204, PureMu(1), 1e-4)
	assert.Zero(t, PureMu(0))
}

// A run of pure steps has its pure statement beside its composed one, and
// the statement charged is the one after which the total admits most.
func TestStatementsAndRoomiest(t *testing.T) {
	lap := func(e float64) Step { return Step{Name: "l", Mechanism: MechLaplace, Calibration: "pure", Epsilon: e} }
	gauss := Step{Name: "g", Mechanism: MechGaussian, Sensitivity: 1, Scale: 10, Rho: 0.005}
	pld := Charge{Epsilon: 0.9, Delta: 1e-6}
	pure := Charge{Epsilon: 1.2, Rho: 3 * 0.4 * 0.4 / 2}
	tests := []struct {
		name  string
		c     Charge
		steps []Step
		want  []Charge
	}{
		{"pure steps, (ε, δ) charge", pld, []Step{lap(0.4), lap(0.4), lap(0.4)}, []Charge{pld, pure}},
		{"a Gaussian step", pld, []Step{lap(0.4), gauss}, []Charge{pld}},
		{"already pure", pure, []Step{lap(0.4), lap(0.4), lap(0.4)}, []Charge{pure}},
		{"no steps", pld, nil, []Charge{pld}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ChargeStatements(tc.c, tc.steps)
			require.Len(t, got, len(tc.want))
			for i := range got {
				assert.InDelta(t, tc.want[i].Epsilon, got[i].Epsilon, 1e-12)
				assert.Equal(t, tc.want[i].Delta, got[i].Delta)
				assert.InDelta(t, tc.want[i].Rho, got[i].Rho, 1e-12)
			}
		})
	}
	cands := []Charge{pld, pure}
	var none Tally
	assert.Equal(t, pure, Roomiest(Grant{Kind: GrantApprox, Epsilon: 3, Delta: 1e-6}, none, cands), "δ kept for later runs")
	assert.Equal(t, pld, Roomiest(Grant{Kind: GrantApprox, Epsilon: 1, Delta: 1e-6}, none, cands), "the pure statement does not fit")
	assert.Equal(t, pld, Roomiest(Grant{Kind: GrantApprox, Epsilon: 0.5, Delta: 1e-6}, none, cands), "neither fits: the composed one")
}
