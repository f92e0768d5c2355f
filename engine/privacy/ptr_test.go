package privacy

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A propose-test-release test composes by basic composition with the
// zCDP composition of the other steps inside what it leaves: ε = ε_t +
// ε_zcdp(ρ, δ − δ_t), δ = δ_t + (δ − δ_t); its threshold is b·ln(1/δ_t).
// It is refused under a ρ grant, and tests that spend the whole δ are
// over budget.
func TestPTRComposition(t *testing.T) {
	g := Grant{Kind: GrantApprox, Epsilon: 1, Delta: 1e-6}
	a, err := NewAccountant(g)
	require.NoError(t, err)
	plan, err := NewPTRPlan(a, NoiseZCDP, 0.1, 5e-7, Share{Name: "rest", Weight: 1, Mechanism: MechGaussian})
	require.NoError(t, err)
	rhoLeft, err := RhoForEpsDelta(0.9, 5e-7)
	require.NoError(t, err)
	assert.InEpsilon(t, rhoLeft, plan.Total().Rho, 1e-12, "the plan spans what the test leaves")
	rel, thr, err := a.PTRTest("test", 0.1, 5e-7)
	require.NoError(t, err)
	assert.InEpsilon(t, rel.Scale()*math.Log(1/5e-7), thr, 1e-12)
	assert.GreaterOrEqual(t, rel.Scale(), 1/0.1)
	require.NoError(t, rel.Add(NewSeededSource(1), []float64{3}))
	b, err := plan.Budget("rest")
	require.NoError(t, err)
	_, err = a.Gaussian("rest", 1, 4, b)
	require.NoError(t, err)
	ach, err := Compose(g, a.Steps())
	require.NoError(t, err)
	assert.Equal(t, "basic", ach.Composition)
	assert.InEpsilon(t, 0.1+EpsilonFromRho(rhoLeft, 5e-7), ach.Epsilon, 1e-9)
	assert.InEpsilon(t, 1e-6, ach.Delta, 1e-12)
	assert.LessOrEqual(t, ach.Epsilon, 1+1e-9)
	// A planned stop after the test: only the test is charged.
	only, err := Compose(g, a.Steps()[:1])
	require.NoError(t, err)
	assert.Equal(t, Achieved{Epsilon: 0.1, Delta: 5e-7, Composition: "basic"}, only)

	z, err := NewAccountant(Grant{Kind: GrantZCDP, Rho: 1})
	require.NoError(t, err)
	_, _, err = z.PTRTest("test", 0.1, 1e-7)
	require.ErrorIs(t, err, ErrInvalidBudget)
	_, err = NewPTRPlan(z, NoiseZCDP, 0.1, 1e-7, Share{Name: "rest", Weight: 1})
	require.ErrorIs(t, err, ErrInvalidBudget)
	_, err = Compose(g, []Step{{Name: "t", Mechanism: MechLaplace, Calibration: CalibPTR, Sensitivity: 1, Scale: 10, Epsilon: 0.1, Delta: 1e-6}})
	require.ErrorIs(t, err, ErrOverBudget)
}
