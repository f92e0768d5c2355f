package privacy

import (
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func pureStep(eps float64) Step {
	return Step{Name: "lap", Mechanism: MechLaplace, Calibration: "pure", Epsilon: eps, Rho: eps * eps / 2}
}
func zStep(rho float64) Step {
	return Step{Name: "gauss", Mechanism: MechGaussian, Calibration: "zcdp", Rho: rho}
}
func adpStep(eps, delta float64) Step { // an (ε, δ) step without zCDP accounting
	return Step{Name: "adp", Mechanism: MechGaussian, Calibration: "classical", Epsilon: eps, Delta: delta}
}
func classicalStep(eps, delta float64) Step { // paper mode: (ε, δ) plus its exact ρ
	s, _ := ClassicalGaussianSigma(1, eps, delta)
	return Step{Name: "cls", Mechanism: MechGaussian, Calibration: "classical", Epsilon: eps, Delta: delta, Rho: RhoOfGaussian(1, s)}
}

func TestCompose(t *testing.T) {
	approx := Grant{Kind: GrantApprox, Epsilon: 1, Delta: 1e-6}
	rho1, _ := RhoForEpsDelta(1, 1e-6)
	cases := []struct {
		name  string
		grant Grant
		steps []Step
		comp  string  // "" means refused
		eps   float64 // expected achieved ε (0: not checked)
		rho   float64
	}{
		{"pure grant, pure steps", Grant{Kind: GrantPure, Epsilon: 1}, []Step{pureStep(0.4), pureStep(0.6)}, "pure", 1, 0},
		{"pure grant over", Grant{Kind: GrantPure, Epsilon: 1}, []Step{pureStep(0.4), pureStep(0.61)}, "", 0, 0},
		{"pure grant refuses Gaussian", Grant{Kind: GrantPure, Epsilon: 10}, []Step{zStep(0.001)}, "", 0, 0},
		{"pure grant refuses approx", Grant{Kind: GrantPure, Epsilon: 10}, []Step{classicalStep(0.1, 1e-9)}, "", 0, 0},
		{"zcdp grant sums rho", Grant{Kind: GrantZCDP, Rho: 0.5}, []Step{zStep(0.2), pureStep(0.5), zStep(0.175)}, "zcdp", 0, 0.5},
		{"zcdp grant over", Grant{Kind: GrantZCDP, Rho: 0.5}, []Step{zStep(0.4), zStep(0.11)}, "", 0, 0},
		{"zcdp grant needs rho", Grant{Kind: GrantZCDP, Rho: 5}, []Step{adpStep(0.1, 1e-9)}, "", 0, 0},
		{"approx: all pure → pure", approx, []Step{pureStep(0.5), pureStep(0.5)}, "pure", 1, 0},
		{"approx: gaussian → zcdp", approx, []Step{zStep(rho1 / 2), zStep(rho1 / 2)}, "zcdp", 1, rho1},
		{"approx: gaussian over", approx, []Step{zStep(rho1 / 2), zStep(rho1 * 0.51)}, "", 0, 0},
		{"approx: pure+gaussian → mixed", approx, []Step{pureStep(0.5), zStep(0.005)}, "mixed", 0.5 + EpsilonFromRho(0.005, 1e-6), 0.005},
		{"approx: basic for adp-only", approx, []Step{adpStep(0.5, 5e-7), adpStep(0.5, 5e-7)}, "basic", 1, 0},
		{"approx: basic delta over", approx, []Step{adpStep(0.5, 5e-7), adpStep(0.5, 6e-7)}, "", 0, 0},
		// Paper mode: k classical steps at (ε/k, δ/k) fit by basic
		// composition; zCDP on their exact ρ is tighter and is chosen.
		{"approx: paper split → zcdp wins", approx, []Step{classicalStep(0.25, 2.5e-7), classicalStep(0.25, 2.5e-7), classicalStep(0.25, 2.5e-7), classicalStep(0.25, 2.5e-7)}, "zcdp", 0, 0},
		{"approx: many pure steps → zcdp", approx, func() []Step {
			var s []Step
			for i := 0; i < 400; i++ {
				s = append(s, pureStep(0.01)) // Σε = 4 > 1, but Σρ = 0.02 fits
			}
			return s
		}(), "zcdp", 0, 0.02},
		{"empty", approx, nil, "pure", 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ach, err := Compose(c.grant, c.steps)
			if c.comp == "" {
				assert.ErrorIs(t, err, ErrOverBudget)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.comp, ach.Composition)
			if c.eps != 0 {
				assert.InDelta(t, c.eps, ach.Epsilon, 1e-9)
			}
			if c.rho != 0 {
				assert.InDelta(t, c.rho, ach.Rho, 1e-12)
			}
			if c.grant.Kind == GrantApprox {
				assert.LessOrEqual(t, ach.Epsilon, c.grant.Epsilon*(1+slack))
				assert.LessOrEqual(t, ach.Delta, c.grant.Delta*(1+slack))
			}
		})
	}
}

func TestComposePicksTightest(t *testing.T) {
	// Four classical steps: basic composition gives ε = 1 exactly; the
	// zCDP route on their ρ gives less, and must be reported.
	g := Grant{Kind: GrantApprox, Epsilon: 1, Delta: 1e-6}
	steps := []Step{classicalStep(0.25, 2.5e-7), classicalStep(0.25, 2.5e-7), classicalStep(0.25, 2.5e-7), classicalStep(0.25, 2.5e-7)}
	ach, err := Compose(g, steps)
	require.NoError(t, err)
	assert.Equal(t, "zcdp", ach.Composition)
	assert.Less(t, ach.Epsilon, 1.0)
	// Pure steps only, few of them: pure beats zCDP.
	ach, err = Compose(g, []Step{pureStep(0.3)})
	require.NoError(t, err)
	assert.Equal(t, "pure", ach.Composition)
	assert.Equal(t, 0.3, ach.Epsilon)
	assert.Equal(t, 0.0, ach.Delta)
}

func TestComposeRejectsMalformedSteps(t *testing.T) {
	g := Grant{Kind: GrantApprox, Epsilon: 1, Delta: 1e-6}
	for _, s := range []Step{
		{Name: "free"},
		{Name: "nan", Epsilon: math.NaN()},
		{Name: "neg", Rho: -1},
		{Name: "inf", Rho: math.Inf(1)},
		{Name: "delta only", Delta: 1e-7, Rho: 0.1},
		{Name: "delta 1", Epsilon: 0.1, Delta: 1},
	} {
		_, err := Compose(g, []Step{s})
		assert.ErrorIs(t, err, ErrInvalidBudget, s.Name)
		a, _ := NewAccountant(g)
		assert.ErrorIs(t, a.Spend(s), ErrInvalidBudget, s.Name)
		assert.Empty(t, a.Steps())
	}
	_, err := Compose(Grant{Kind: "bogus"}, nil)
	assert.ErrorIs(t, err, ErrInvalidBudget)
}

func TestGrantValidate(t *testing.T) {
	for _, g := range []Grant{
		{Kind: GrantPure, Epsilon: 0}, {Kind: GrantPure, Epsilon: math.Inf(1)},
		{Kind: GrantApprox, Epsilon: 1, Delta: 0}, {Kind: GrantApprox, Epsilon: 1, Delta: 1},
		{Kind: GrantZCDP, Rho: math.NaN()}, {Kind: "x"},
	} {
		_, err := NewAccountant(g)
		assert.ErrorIs(t, err, ErrInvalidBudget, "%+v", g)
	}
}

func TestSpendBoundarySlackAndRefusalLeavesState(t *testing.T) {
	for _, kind := range []GrantKind{GrantPure, GrantApprox, GrantZCDP} {
		g := Grant{Kind: kind, Epsilon: 1, Delta: 1e-6, Rho: 0.3}
		a, err := NewAccountant(g)
		require.NoError(t, err)
		var hooked []string
		a.OnSpend(func(s Step) { hooked = append(hooked, s.Name) })
		// Three thirds of the budget: float rounding must not refuse the last.
		for i := 0; i < 3; i++ {
			var err error
			switch kind {
			case GrantPure:
				_, err = a.spendLaplace("third", 1, 1, 1.0/3)
			case GrantZCDP:
				_, err = a.spendGaussianRho("third", 1, 10, 0.1)
			case GrantApprox:
				// The exact Gaussian composition's boundary, less the
				// lattice allowance (as an exact plan computes it).
				mu, _ := GDPMu(1, 1e-6)
				mu /= latticeMargin * latticeMargin
				_, err = a.spendGaussianRho("third", 1, 10, mu*mu/2/3)
			}
			require.NoError(t, err, "%s step %d", kind, i)
		}
		before := a.Steps()
		achBefore := a.Achieved()
		var err2 error
		switch kind {
		case GrantPure:
			_, err2 = a.spendLaplace("extra", 1, 1, 1e-6)
		default:
			_, err2 = a.spendGaussianRho("extra", 1, 10, 1e-6)
		}
		assert.ErrorIs(t, err2, ErrOverBudget, kind)
		assert.Equal(t, before, a.Steps(), "refusal must leave the steps unchanged")
		assert.Equal(t, achBefore, a.Achieved())
		assert.Equal(t, []string{"third", "third", "third"}, hooked)
	}
}

func TestSpendRefusesBadInputBeforeSpending(t *testing.T) {
	a, _ := NewAccountant(Grant{Kind: GrantApprox, Epsilon: 1, Delta: 1e-6})
	_, err := a.spendGaussianRho("x", math.NaN(), 3, 0.01)
	assert.ErrorIs(t, err, ErrInvalidBudget)
	_, err = a.spendGaussianRho("x", 1, 0, 0.01)
	assert.ErrorIs(t, err, ErrInvalidBudget)
	_, err = a.spendGaussianRho("x", 1, 3, -1)
	assert.ErrorIs(t, err, ErrInvalidBudget)
	_, err = a.spendGaussianEpsDelta("x", 1, 3, 2, 1e-6, "classical")
	assert.ErrorIs(t, err, ErrInvalidBudget)
	_, err = a.spendGaussianEpsDelta("x", 1, 3, 0.5, 1e-6, "fancy")
	assert.ErrorIs(t, err, ErrInvalidBudget)
	_, err = a.spendLaplace("x", 1, 3, math.Inf(1))
	assert.ErrorIs(t, err, ErrInvalidBudget)
	_, err = a.spendExponential("x", 0, 0.1)
	assert.ErrorIs(t, err, ErrInvalidBudget)
	assert.Empty(t, a.Steps())
}

func TestSpendHelpersRecordGrid(t *testing.T) {
	a, _ := NewAccountant(Grant{Kind: GrantZCDP, Rho: 10})
	sigma, err := a.spendGaussianRho("cov", 2, 2001000, 0.5)
	require.NoError(t, err)
	st := a.Steps()[0]
	assert.Equal(t, Grid(sigma), st.Grid)
	assert.Equal(t, 2.0, st.QuerySensitivity)
	assert.Equal(t, 2001000, st.Dim)
	// Effective sensitivity covers the grid rounding, σ is calibrated to it.
	assert.GreaterOrEqual(t, st.Sensitivity, 2+st.Grid*math.Sqrt(2001000))
	assert.Less(t, st.Sensitivity, 2*(1+1e-6))
	assert.LessOrEqual(t, RhoOfGaussian(st.Sensitivity, sigma), 0.5)
	assert.Less(t, relErr(sigma, 2), 1e-6) // Δ/sqrt(2ρ) = 2

	b, err := a.spendLaplace("counts", 1, 1000, 0.5)
	require.NoError(t, err)
	st = a.Steps()[1]
	assert.GreaterOrEqual(t, st.Sensitivity, 1+Grid(b)*1000)
	assert.LessOrEqual(t, st.Sensitivity/b, 0.5)

	s2, err := a.spendGaussianEpsDelta("cls", 1, 5, 0.5, 1e-6, "analytic")
	require.NoError(t, err)
	an, _ := AnalyticGaussianSigma(1, 0.5, 1e-6)
	assert.Greater(t, s2, an*(1+0.9e-9))
	assert.Less(t, s2, an*(1+1e-8))
	st = a.Steps()[2]
	assert.InDelta(t, RhoOfGaussian(st.Sensitivity, s2), st.Rho, 1e-12)
	beta, err := a.spendExponential("pick", 2, 0.4)
	require.NoError(t, err)
	assert.Equal(t, 0.1, beta)
	assert.InDelta(t, 0.02, a.Steps()[3].Rho, 1e-15)
}

func TestAccountantConcurrentNeverOverspends(t *testing.T) {
	a, _ := NewAccountant(Grant{Kind: GrantApprox, Epsilon: 1, Delta: 1e-6})
	total, _ := a.TotalRho()
	// How many steps fit, spent one after the other (the exact Gaussian
	// composition admits more than the zCDP total's 37).
	seq, _ := NewAccountant(a.Grant())
	want := 0
	for {
		if _, err := seq.spendGaussianRho("g", 1, 1, total/37); err != nil {
			break
		}
		want++
	}
	require.GreaterOrEqual(t, want, 37)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 10; j++ {
				if _, err := a.spendGaussianRho("g", 1, 1, total/37); err == nil {
					mu.Lock()
					ok++
					mu.Unlock()
				} else if !errors.Is(err, ErrOverBudget) {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, want, ok)
	ach := a.Achieved()
	assert.LessOrEqual(t, ach.Epsilon, 1.0)
	assert.Equal(t, MethodGDP, ach.Composition)
	var spent float64
	for _, st := range a.Steps() {
		spent += stepRho(st)
	}
	assert.GreaterOrEqual(t, spent, total*(1-1e-9), "no zCDP budget left")
}

func TestTotalRhoPureErrors(t *testing.T) {
	a, _ := NewAccountant(Grant{Kind: GrantPure, Epsilon: 1})
	_, err := a.TotalRho()
	assert.ErrorIs(t, err, ErrInvalidBudget)
}

func TestPaperSplit(t *testing.T) {
	p := struct{ Epsilon, Delta float64 }{0.25, 2.5e-7} // (1, 1e-6) split 4 ways by basic composition
	// Paper mode end to end: k classical steps at the split fit the grant.
	a, _ := NewAccountant(Grant{Kind: GrantApprox, Epsilon: 1, Delta: 1e-6})
	for i := 0; i < 4; i++ {
		_, err := a.spendGaussianEpsDelta("paper", 1, 100, p.Epsilon, p.Delta, "classical")
		require.NoError(t, err)
	}
	assert.LessOrEqual(t, a.Achieved().Epsilon, 1.0)
}
