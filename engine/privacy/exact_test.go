package privacy

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// spendPlan draws every step of plan p (unit sensitivity, 4 coordinates)
// and returns the noise scale of the first Gaussian step.
func spendPlan(t *testing.T, a *Accountant, p *Plan) float64 {
	t.Helper()
	sigma := 0.0
	for _, s := range p.Shares() {
		b, err := p.Budget(s.Name)
		require.NoError(t, err)
		for i := 0; i < s.Steps; i++ {
			switch s.Mechanism {
			case MechLaplace:
				_, err = a.Laplace(s.Name, 1, 4, b)
			case MechExponential:
				_, err = a.Exponential(s.Name, 1, b)
			default:
				var r *Release
				r, err = a.Gaussian(s.Name, 1, 4, b)
				if err == nil && sigma == 0 {
					sigma = r.Step().Scale
				}
			}
			require.NoError(t, err, "share %s step %d", s.Name, i)
		}
	}
	return sigma
}

// At (1, 1e-6) an exact plan needs at least 6 % less noise per Gaussian
// step than the zCDP plan, for one step and for a composition, and the
// accountant admits the whole plan by the exact Gaussian composition.
func TestExactPlanGaussian(t *testing.T) {
	for _, steps := range []int{1, 10} {
		g := Grant{Kind: GrantApprox, Epsilon: 1, Delta: 1e-6}
		az, _ := NewAccountant(g)
		pz, err := NewPlan(az, NoiseZCDP, Share{Name: "g", Weight: 1, Steps: steps})
		require.NoError(t, err)
		sz := spendPlan(t, az, pz)

		ae, _ := NewAccountant(g)
		pe, err := NewPlan(ae, NoiseExact, Share{Name: "g", Weight: 1, Steps: steps})
		require.NoError(t, err)
		se := spendPlan(t, ae, pe)
		assert.Less(t, se, 0.94*sz, "steps=%d: exact σ %.4g vs zCDP σ %.4g", steps, se, sz)
		t.Logf("steps=%d: σ exact %.4f, zCDP %.4f (ratio %.4f)", steps, se, sz, se/sz)

		ach := ae.Achieved()
		assert.Equal(t, MethodGDP, ach.Composition)
		assert.LessOrEqual(t, ach.Epsilon, 1.0)
		assert.Greater(t, ach.Epsilon, 0.999, "the plan uses the grant")
	}
}

// A plan mixing a Laplace share with Gaussian steps is scaled up by the
// privacy loss distribution and still meets the grant.
func TestExactPlanMixed(t *testing.T) {
	g := Grant{Kind: GrantApprox, Epsilon: 1, Delta: 1e-6}
	shares := []Share{{Name: "mean", Weight: 0.1, Mechanism: MechLaplace}, {Name: "cov", Weight: 0.9, Steps: 3}}
	az, _ := NewAccountant(g)
	pz, err := NewPlan(az, NoiseZCDP, shares...)
	require.NoError(t, err)
	sz := spendPlan(t, az, pz)
	ae, _ := NewAccountant(g)
	pe, err := NewPlan(ae, NoiseExact, shares...)
	require.NoError(t, err)
	se := spendPlan(t, ae, pe)
	assert.Less(t, se, sz)
	ach := ae.Achieved()
	assert.LessOrEqual(t, ach.Epsilon, 1.0)
	assert.Equal(t, MethodPLD, ach.Composition)
	t.Logf("mixed: σ exact %.4f, zCDP %.4f (ratio %.4f), ε %.4f by %s", se, sz, se/sz, ach.Epsilon, ach.Composition)
}

// Under ρ and pure grants an exact plan is the zCDP and pure plan.
func TestExactPlanOtherGrants(t *testing.T) {
	a, _ := NewAccountant(Grant{Kind: GrantZCDP, Rho: 0.5})
	p, err := NewPlan(a, NoiseExact, Share{Name: "g", Weight: 1})
	require.NoError(t, err)
	b, _ := p.Budget("g")
	assert.InDelta(t, 0.5, b.Rho, 1e-15)
	a2, _ := NewAccountant(Grant{Kind: GrantPure, Epsilon: 1})
	_, err = NewPlan(a2, NoiseExact, Share{Name: "g", Weight: 1})
	assert.ErrorIs(t, err, ErrInvalidBudget)
}

// largestFitting finds the same c as a bisection to the same tolerance,
// never one that does not fit, on smooth and on steep, kinked and flat
// gaps, and on the plans' own ε curves (within 1e-4 of a fine bisection).
func TestLargestFitting(t *testing.T) {
	bisect := func(gap func(float64) float64) float64 {
		lo, hi := 1.0, 64.0
		if gap(hi) <= 0 {
			return hi
		}
		for i := 0; i < 200 && hi-lo > 1e-12*lo; i++ {
			if m := (lo + hi) / 2; gap(m) <= 0 {
				lo = m
			} else {
				hi = m
			}
		}
		return lo
	}
	curves := map[string]func(float64) float64{
		"linear":    func(c float64) float64 { return c - 3.7 },
		"steep":     func(c float64) float64 { return math.Exp(10*c) - math.Exp(10*1.3) },
		"kinked":    func(c float64) float64 { return math.Max(c-2.2, 100*(c-2.2)) },
		"flat then": func(c float64) float64 { return math.Max(-1e-6, c-5) },
		"none fit":  func(c float64) float64 { return c },
		"all fit":   func(c float64) float64 { return -1 },
		"inf above 9": func(c float64) float64 {
			if c > 9 {
				return math.Inf(1)
			}
			return c - 20
		},
	}
	g := Grant{Kind: GrantApprox, Epsilon: 1, Delta: 1e-6}
	for _, shares := range [][]Share{
		{{Name: "mean", Weight: 0.1, Mechanism: MechLaplace}, {Name: "cov", Weight: 0.9, Steps: 3}},
		{{Name: "q", Weight: 0.1, Mechanism: MechExponential, Steps: 20}, {Name: "cov", Weight: 0.9}},
	} {
		curves["plan "+shares[0].Name] = func(c float64) float64 {
			p, err := RunPLD(exactSteps(0.01*c, shares), DefaultPLDGrid)
			require.NoError(t, err)
			eps, err := p.Epsilon(g.Delta)
			require.NoError(t, err)
			return eps - g.Epsilon*(1-1e-9)
		}
	}
	for name, gap := range curves {
		t.Run(name, func(t *testing.T) {
			calls := 0
			counted := func(c float64) float64 { calls++; return gap(c) }
			got, want := largestFitting(counted, 64, 1e-4), bisect(gap)
			t.Logf("c = %.6g (bisection %.6g) in %d evaluations", got, want, calls)
			if gap(1) > 0 {
				assert.Equal(t, 1.0, got, "the floor")
				return
			}
			assert.LessOrEqual(t, gap(got), 0.0, "c fits")
			assert.InDelta(t, want, got, 1e-4*want)
			assert.LessOrEqual(t, calls, 60)
		})
	}
}

// Calibrate scales an exact plan on its own goroutine to the budgets the
// first Budget call would have scaled it to, bit for bit; Mechanism reads
// a share's mechanism without scaling the plan, on a prefixed view too.
func TestExactPlanCalibrate(t *testing.T) {
	g := Grant{Kind: GrantApprox, Epsilon: 1, Delta: 1e-6}
	shares := []Share{{Name: "x/clip", Weight: 0.1, Mechanism: MechExponential}, {Name: "x/cov", Weight: 0.9, Mechanism: MechGaussian}}
	budgets := func(calibrate bool) []Budget {
		a, _ := NewAccountant(g)
		p, err := NewPlan(a, NoiseExact, shares...)
		require.NoError(t, err)
		v := p.Prefixed("x/")
		m, err := v.Mechanism("clip")
		require.NoError(t, err)
		assert.Equal(t, MechExponential, m)
		_, err = v.Mechanism("mean")
		assert.ErrorIs(t, err, ErrInvalidBudget)
		assert.Equal(t, p.total.Rho, p.exact.rho, "not scaled yet")
		if calibrate {
			v.Calibrate()
		}
		var out []Budget
		for _, s := range []string{"clip", "cov"} {
			b, err := v.Budget(s)
			require.NoError(t, err)
			out = append(out, b)
		}
		assert.Greater(t, p.exact.rho, p.total.Rho, "scaled")
		return out
	}
	assert.Equal(t, budgets(false), budgets(true))
	a, _ := NewAccountant(g)
	p, err := NewPlan(a, NoiseZCDP, shares...)
	require.NoError(t, err)
	p.Calibrate() // nothing to calibrate
	assert.Nil(t, p.exact)
}
