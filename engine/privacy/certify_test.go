package privacy

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func expSteps(t *testing.T, k int, eps float64) []Step {
	t.Helper()
	out := make([]Step, k)
	for i := range out {
		st, err := exponentialStep(fmt.Sprintf("vector %d", i+1), 1, eps)
		require.NoError(t, err)
		out[i] = st
	}
	return out
}

// orbit-deflation with rank 25 under the grant (ε = 1, δ = 1e-6): 25
// exponential draws at ε = 0.04. The run is pure 1-DP and (0.43, 1e-6)-DP;
// it is not pure 0.43-DP.
func TestCertifyOrbitDeflation(t *testing.T) {
	grant := Grant{Kind: GrantApprox, Epsilon: 1, Delta: 1e-6}
	steps := expSteps(t, 25, 0.04)
	ach, err := Compose(grant, steps)
	require.NoError(t, err)
	require.Equal(t, "zcdp", ach.Composition, "the accountant composes the draws by zCDP")
	require.InDelta(t, 0.43, ach.Epsilon, 0.005)

	g, err := Certify(Guarantee{Kind: Pure, Neighbours: "one row replaced"}, grant, steps)
	require.NoError(t, err)
	assert.Equal(t, Pure, g.Kind)
	assert.InDelta(t, 1, g.Epsilon, 1e-12, "the pure ε is the sum of the steps' ε")
	eps, delta, ok := g.Tighter()
	require.True(t, ok)
	assert.Equal(t, ach.Epsilon, eps)
	assert.Equal(t, 1e-6, delta)
	assert.InDelta(t, 25*0.04*0.04/8, g.Rho, 1e-15)
	txt := g.String()
	assert.Contains(t, txt, "pure ε-differential privacy with ε = 1,")
	assert.Contains(t, txt, "(ε, δ)-differential privacy with ε = 0.4299, δ = 1e-06")
	assert.NotContains(t, txt, "pure ε-differential privacy with ε = 0.43")
	assert.Equal(t, "one row replaced", g.Neighbours)
	require.NoError(t, g.Validate())

	// Declared with no kind, the same steps certify the same way.
	g2, err := Certify(Guarantee{}, grant, steps)
	require.NoError(t, err)
	g2.Neighbours = "one row replaced"
	assert.Equal(t, g, g2)
	assert.LessOrEqual(t, g.TightEpsilon, ach.Epsilon, "the tighter figure is the tightest accounting's")

	// Read back from a form without TightEpsilon, the zCDP conversion is
	// stated: valid, and here the same figure.
	g.TightEpsilon = 0
	eps, _, ok = g.Tighter()
	require.True(t, ok)
	assert.InDelta(t, ach.Epsilon, eps, 1e-12)
}

func certTightEps(t *testing.T, steps ...Step) float64 {
	t.Helper()
	eps, _, err := tightEpsilon(steps, 1e-6)
	require.NoError(t, err)
	return eps
}

func gdpRho(steps ...Step) float64 {
	mu, _, _ := RunGDP(steps)
	return mu * mu / 2
}

func TestCertify(t *testing.T) {
	approx := Grant{Kind: GrantApprox, Epsilon: 1, Delta: 1e-6}
	total, _ := RhoForEpsDelta(1, 1e-6)
	gauss := func(rho float64) Step { st, _ := gaussianRhoStep("g", 1, 3, rho); return st }
	lap := func(eps float64) Step { st, _ := laplaceStep("l", 1, 3, eps); return st }
	// An (ε, δ) step without a zCDP cost: only basic composition applies.
	classical := func(eps, delta float64) Step {
		return Step{Name: "c", Mechanism: MechGaussian, Calibration: NoiseClassical, Sensitivity: 1, Scale: 5, Epsilon: eps, Delta: delta}
	}
	cases := []struct {
		name     string
		declared GuaranteeKind
		grant    Grant
		steps    []Step
		kind     GuaranteeKind
		eps      float64
		delta    float64
		rho      float64
	}{
		{"pure grant, Laplace", Pure, Grant{Kind: GrantPure, Epsilon: 1}, []Step{lap(0.5), lap(0.5)}, Pure, 1, 0, 0},
		{"(ε, δ) grant, pure steps met by pure composition, tighter (ε, δ) by the PLD", "", approx, []Step{lap(0.5), lap(0.5)}, Pure, 1, 0, 0.25},
		{"ρ grant, pure steps", "", Grant{Kind: GrantZCDP, Rho: 1}, []Step{lap(0.5)}, Pure, 0.5, 0, 0.125},
		{"(ε, δ) grant, Gaussian: exact composition", "", approx, []Step{gauss(total / 2), gauss(total / 2)}, Approx, certTightEps(t, gauss(total/2), gauss(total/2)), 1e-6, gdpRho(gauss(total/2), gauss(total/2))},
		{"declared approx, exact composition", Approx, approx, []Step{gauss(total)}, Approx, certTightEps(t, gauss(total)), 1e-6, gdpRho(gauss(total))},
		{"ρ grant, Gaussian", ZCDP, Grant{Kind: GrantZCDP, Rho: 0.5}, []Step{gauss(0.5)}, ZCDP, 0, 0, 0.5},
		{"mixed: privacy loss distribution", "", approx, []Step{lap(0.1), gauss(total / 4)}, Approx, certTightEps(t, lap(0.1), gauss(total/4)), 1e-6, 0},
		{"paper basic composition", "", approx, []Step{classical(0.5, 5e-7), classical(0.5, 5e-7)}, Approx, 1, 1e-6, 0},
		{"model keeps its kind", Model, approx, []Step{gauss(total)}, Model, certTightEps(t, gauss(total)), 1e-6, gdpRho(gauss(total))},
		{"nominal keeps its kind", Nominal, Grant{Kind: GrantPure, Epsilon: 1}, []Step{lap(1)}, Nominal, 1, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := Certify(Guarantee{Kind: tc.declared}, tc.grant, tc.steps)
			require.NoError(t, err)
			assert.Equal(t, tc.kind, g.Kind)
			assert.InDelta(t, tc.eps, g.Epsilon, 1e-9)
			assert.InDelta(t, tc.delta, g.Delta, 1e-15)
			assert.InDelta(t, tc.rho, g.Rho, 1e-9*tc.rho+1e-15)
			require.NoError(t, g.Validate())
			if tc.kind == Pure {
				assert.Contains(t, g.String(), "pure ε-differential privacy with ε = "+num(tc.eps))
			}
		})
	}
}

// A run of exactly calibrated exponential steps under an (ε, δ) grant is
// pure with an ε above the grant and (ε, δ) within it: each statement has
// its own fields, and the pure one carries no δ (issue 26 §5).
func TestCertifyStatementsDoNotContradict(t *testing.T) {
	var steps []Step
	for range 10 {
		steps = append(steps, Step{Name: "q", Mechanism: MechExponential, Calibration: "pure", Epsilon: 0.1371})
	}
	g, err := Certify(Guarantee{Kind: Pure}, Grant{Kind: GrantApprox, Epsilon: 1, Delta: 1e-6}, steps)
	require.NoError(t, err)
	assert.Equal(t, Pure, g.Kind)
	assert.InDelta(t, 1.371, g.Epsilon, 1e-12)
	assert.Zero(t, g.Delta, "a pure ε has no δ")
	st := g.JSON().Statements
	assert.InDelta(t, 1.371, st.PureEpsilon, 1e-12)
	assert.Equal(t, 1e-6, st.Delta)
	assert.LessOrEqual(t, st.Epsilon, 1.0, "the (ε, δ) statement is within the grant")
	assert.InDelta(t, 10*0.1371*0.1371/2, st.Rho, 1e-12)
	assert.Equal(t, g, g.JSON().Guarantee(), "the JSON form reads back")
	assert.Contains(t, g.String(), "pure ε-differential privacy with ε = 1.371, and also (ε, δ)-differential privacy with ε = "+num(st.Epsilon)+", δ = 1e-06")

	gauss, err := gaussianRhoStep("g", 1, 3, 0.01)
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		grant Grant
		want  func(Statements) bool
	}{
		{"exact Gaussian: (ε, δ) and μ", Grant{Kind: GrantApprox, Epsilon: 1, Delta: 1e-6}, func(s Statements) bool { return s.PureEpsilon == 0 && s.Delta == 1e-6 && s.Mu > 0 }},
		{"ρ grant: ρ", Grant{Kind: GrantZCDP, Rho: 0.01}, func(s Statements) bool { return s.PureEpsilon == 0 && s.Rho == 0.01 && s.Delta == 0 }},
	} {
		g, err := Certify(Guarantee{}, tc.grant, []Step{gauss})
		require.NoError(t, err, tc.name)
		assert.True(t, tc.want(g.Statements()), "%s: %+v", tc.name, g.Statements())
	}
}

func TestCertifyRefuses(t *testing.T) {
	approx := Grant{Kind: GrantApprox, Epsilon: 1, Delta: 1e-6}
	gauss, err := gaussianRhoStep("cov", 1, 3, 0.01)
	require.NoError(t, err)
	cases := []struct {
		name     string
		declared GuaranteeKind
		steps    []Step
		want     error
		msg      string
	}{
		{"pure declared, Gaussian spent", Pure, []Step{gauss}, ErrGuarantee, `step "cov" (gaussian, δ = 0) is not pure`},
		{"none with a step", None, []Step{gauss}, ErrGuarantee, "non-private result declared 1 privacy steps"},
		{"private with no step", Approx, nil, ErrGuarantee, "claimed with no privacy step"},
		{"over the grant", "", expSteps(t, 3, 1), ErrOverBudget, "granted"},
		{"unknown kind", "magic", []Step{gauss}, ErrGuarantee, `unknown guarantee kind "magic"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Certify(Guarantee{Kind: tc.declared}, approx, tc.steps)
			assert.ErrorIs(t, err, tc.want)
			assert.ErrorContains(t, err, tc.msg)
		})
	}
	g, err := Certify(Guarantee{Kind: None}, approx, nil)
	require.NoError(t, err)
	assert.Equal(t, None, g.Kind)
}
