package privacy

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

var (
	approxGrant = Grant{Kind: GrantApprox, Epsilon: 1, Delta: 1e-6}
	zcdpGrant   = Grant{Kind: GrantZCDP, Rho: 0.5}
	pureGrant   = Grant{Kind: GrantPure, Epsilon: 1}
)

func newAcct(t *testing.T, g Grant) *Accountant {
	t.Helper()
	a, err := NewAccountant(g)
	require.NoError(t, err)
	return a
}

func TestNewPlanRefusals(t *testing.T) {
	one := Share{Name: "all", Weight: 1}
	cases := []struct {
		name   string
		grant  Grant
		noise  string
		shares []Share
		want   string
	}{
		{"zcdp under a pure grant", pureGrant, NoiseZCDP, []Share{one}, "no zCDP budget"},
		{"classical under a zcdp grant", zcdpGrant, NoiseClassical, []Share{one}, "needs an (ε, δ) grant"},
		{"analytic under a pure grant", pureGrant, NoiseAnalytic, []Share{one}, "needs an (ε, δ) grant"},
		{"pure under a zcdp grant", zcdpGrant, NoisePure, []Share{one}, "need a pure or (ε, δ) grant"},
		{"unknown noise", approxGrant, "exactly", []Share{one}, `unknown noise calibration "exactly"`},
		{"no shares", approxGrant, NoiseZCDP, nil, "no shares"},
		{"unnamed share", approxGrant, NoiseZCDP, []Share{{Weight: 1}}, "has no name"},
		{"duplicate share", approxGrant, NoiseZCDP, []Share{{Name: "a", Weight: 0.5}, {Name: "a", Weight: 0.5}}, `"a" is listed twice`},
		{"no size", approxGrant, NoiseZCDP, []Share{{Name: "a"}}, "exactly one of Weight, Fixed and Rest"},
		{"negative weight", approxGrant, NoiseZCDP, []Share{{Name: "a", Weight: -0.5}}, "must be positive"},
		{"weight and fixed", approxGrant, NoiseZCDP, []Share{{Name: "a", Weight: 0.5, Fixed: 0.001}}, "exactly one of"},
		{"two rests", approxGrant, NoiseZCDP, []Share{{Name: "a", Rest: true}, {Name: "b", Rest: true}}, `shares "a" and "b" both take the rest`},
		{"fixed under an (ε, δ) calibration", approxGrant, NoiseAnalytic, []Share{{Name: "a", Fixed: 0.1}}, "a fixed cost needs zcdp or pure noise"},
		{"negative fixed", approxGrant, NoiseZCDP, []Share{{Name: "a", Fixed: -1}}, "must be positive and finite"},
		{"fixed costs over the grant", approxGrant, NoiseZCDP, []Share{{Name: "a", Fixed: 0.01, Steps: 3}}, "more than all of it"},
		{"nothing left for the rest", approxGrant, NoisePure, []Share{{Name: "a", Fixed: 0.5, Steps: 2}, {Name: "b", Rest: true}}, `"b" is to get what the others leave`},
		{"NaN weight", approxGrant, NoiseZCDP, []Share{{Name: "a", Weight: math.NaN()}}, "must be positive"},
		{"weights above 1", approxGrant, NoiseZCDP, []Share{{Name: "a", Weight: 0.6}, {Name: "b", Weight: 0.5}}, "use 1.1 of the grant, more than all of it"},
		{"negative steps", approxGrant, NoiseZCDP, []Share{{Name: "a", Weight: 1, Steps: -1}}, "-1 steps"},
		{"classical per-step ε > 1", Grant{Kind: GrantApprox, Epsilon: 4, Delta: 1e-6}, NoiseClassical,
			[]Share{{Name: "a", Weight: 0.5}, {Name: "b", Weight: 0.5, Steps: 2}}, `share "a": classical Gaussian calibration is proved only for per-step ε ≤ 1`},
		{"Gaussian share in a pure plan", approxGrant, NoisePure, []Share{{Name: "cov", Weight: 1, Mechanism: MechGaussian}}, "Gaussian share"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewPlan(newAcct(t, tc.grant), tc.noise, tc.shares...)
			require.ErrorIs(t, err, ErrInvalidBudget)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	_, err := NewPlan(nil, NoiseZCDP, one)
	assert.ErrorIs(t, err, ErrInvalidBudget)
}

func TestNewPlanAccepts(t *testing.T) {
	// Classical ε > 1 is fine for a pure share: only the Gaussian formula
	// is limited to ε ≤ 1.
	_, err := NewPlan(newAcct(t, Grant{Kind: GrantApprox, Epsilon: 4, Delta: 1e-6}), NoiseClassical,
		Share{Name: "counts", Weight: 0.5, Mechanism: MechLaplace}, Share{Name: "cov", Weight: 0.5, Steps: 2})
	require.NoError(t, err)
	// Weights that add up to 1 only up to rounding.
	_, err = NewPlan(newAcct(t, approxGrant), NoiseZCDP,
		Share{Name: "a", Weight: 0.1}, Share{Name: "b", Weight: 0.2}, Share{Name: "c", Weight: 0.7})
	require.NoError(t, err)
}

// The plans the estimators wrote by hand: weighted shares, per-iteration
// equal steps, and the papers' basic-composition splits.
func TestPlanBudgets(t *testing.T) {
	a := newAcct(t, approxGrant)
	total, err := a.TotalRho()
	require.NoError(t, err)

	// pca: mean 10 %, covariance 90 %.
	p, err := NewPlan(a, NoiseZCDP, Share{Name: "mean", Weight: 0.1}, Share{Name: "cov", Weight: 0.9})
	require.NoError(t, err)
	b, err := p.Budget("mean")
	require.NoError(t, err)
	assert.Equal(t, Budget{Noise: NoiseZCDP, Rho: 0.1 * total}, b)
	_, err = p.Budget("eigenvalues")
	assert.ErrorIs(t, err, ErrInvalidBudget)

	// rgrad / fedrep: an init share and T equal iterations.
	const T = 40
	p, err = NewPlan(a, NoiseZCDP, Share{Name: "init", Weight: 0.25, Steps: 3}, Share{Name: "iter", Weight: 0.75, Steps: T})
	require.NoError(t, err)
	b, _ = p.Budget("init")
	assert.InDelta(t, 0.25*total/3, b.Rho, 1e-15)
	b, _ = p.Budget("iter")
	assert.InDelta(t, 0.75*total/T, b.Rho, 1e-15)
	assert.Equal(t, T, p.Shares()[1].Steps)

	// rgrad paper mode: (ε/2, δ/2) per phase, split 3 and T ways.
	p, err = NewPlan(a, NoiseAnalytic, Share{Name: "init", Weight: 0.5, Steps: 3}, Share{Name: "iter", Weight: 0.5, Steps: T})
	require.NoError(t, err)
	want := struct{ Epsilon, Delta float64 }{approxGrant.Epsilon / 6, approxGrant.Delta / 6}
	b, _ = p.Budget("init")
	assert.InDelta(t, want.Epsilon, b.Epsilon, 1e-15)
	assert.InDelta(t, want.Delta, b.Delta, 1e-21)
	assert.Equal(t, NoiseAnalytic, b.Noise)

	// fedrep paper mode: T rounds at the ρ of the paper's σ, the rest to
	// the initialisation.
	roundRho := RhoOfGaussian(0.01, 0.5)
	p, err = NewPlan(a, NoiseZCDP, Share{Name: "round", Fixed: roundRho, Steps: T}, Share{Name: "init", Rest: true})
	require.NoError(t, err)
	b, _ = p.Budget("round")
	assert.Equal(t, roundRho, b.Rho, "the formula's cost exactly")
	b, _ = p.Budget("init")
	assert.InDelta(t, total-T*roundRho, b.Rho, 1e-15)
	for _, s := range []string{"round", "init"} {
		b, _ := p.Budget(s)
		n := map[string]int{"round": T, "init": 1}[s]
		for i := 0; i < n; i++ {
			r, err := a.Gaussian(s, 1, 1, b)
			require.NoError(t, err, "%s %d", s, i)
			require.NoError(t, r.Add(NewSeededSource(uint64(i)), []float64{0}))
		}
	}
	a = newAcct(t, approxGrant)

	// orbit-deflation: k exponential draws sharing a pure ε.
	p, err = NewPlan(a, NoisePure, Share{Name: "vectors", Weight: 1, Steps: 25, Mechanism: MechExponential})
	require.NoError(t, err)
	b, _ = p.Budget("vectors")
	assert.InDelta(t, 0.04, b.Epsilon, 1e-15)
	assert.Equal(t, MechExponential, b.Mechanism)
}

// Spending every step of a plan fits the grant exactly (float rounding in
// the split never refuses the last step), for every noise and grant.
func TestPlanSpentInFullFits(t *testing.T) {
	cases := []struct {
		grant Grant
		noise string
		mech  Mechanism
	}{
		{approxGrant, NoiseZCDP, MechGaussian},
		{zcdpGrant, NoiseZCDP, MechGaussian},
		{approxGrant, NoiseClassical, MechGaussian},
		{approxGrant, NoiseAnalytic, MechGaussian},
		{pureGrant, NoisePure, MechLaplace},
		{approxGrant, NoisePure, MechExponential},
		{zcdpGrant, NoiseZCDP, MechExponential},
		{approxGrant, NoiseZCDP, MechLaplace},
	}
	for _, tc := range cases {
		t.Run(string(tc.grant.Kind)+"/"+tc.noise+"/"+string(tc.mech), func(t *testing.T) {
			a := newAcct(t, tc.grant)
			p, err := NewPlan(a, tc.noise, Share{Name: "a", Weight: 0.3, Steps: 3}, Share{Name: "b", Weight: 0.7, Steps: 7})
			require.NoError(t, err)
			src := NewSeededSource(1)
			for _, s := range p.Shares() {
				b, err := p.Budget(s.Name)
				require.NoError(t, err)
				for i := 0; i < s.Steps; i++ {
					switch tc.mech {
					case MechGaussian:
						r, err := a.Gaussian(s.Name, 1, 2, b)
						require.NoError(t, err)
						require.NoError(t, r.Add(src, []float64{1, 2}))
					case MechLaplace:
						r, err := a.Laplace(s.Name, 1, 2, b)
						require.NoError(t, err)
						require.NoError(t, r.Add(src, []float64{1, 2}))
					case MechExponential:
						r, err := a.Exponential(s.Name, 1, b)
						require.NoError(t, err)
						require.NoError(t, r.Sample(func(float64) error { return nil }))
					}
				}
			}
			assert.Empty(t, a.Undrawn())
			assert.Len(t, a.Steps(), 10)
			_, err = Compose(tc.grant, a.Steps())
			require.NoError(t, err)
		})
	}
}

// A release draws exactly what AddGaussian / AddSymmetricGaussian /
// AddLaplace draw for the same scale: one calibration and one noise path.
func TestReleaseDrawsLikeTheSourceHelpers(t *testing.T) {
	a := newAcct(t, Grant{Kind: GrantZCDP, Rho: 10})
	legacy := newAcct(t, Grant{Kind: GrantZCDP, Rho: 10})
	b := Budget{Noise: NoiseZCDP, Rho: 0.5}

	rel, err := a.Gaussian("vec", 0.3, 4, b)
	require.NoError(t, err)
	sigma, err := legacy.spendGaussianRho("vec", 0.3, 4, 0.5)
	require.NoError(t, err)
	assert.Equal(t, legacy.Steps()[0], rel.Step(), "the legacy helper records the same step")
	assert.Equal(t, sigma, rel.Scale())
	assert.Equal(t, Grid(sigma), rel.Grid())

	x := []float64{0.1, 0.2 + 1e-17, -3, 1e-300}
	y := append([]float64(nil), x...)
	require.NoError(t, rel.Add(NewSeededSource(7), x))
	NewSeededSource(7).AddGaussian(y, sigma)
	assert.Equal(t, y, x)
	for _, v := range x {
		assert.Equal(t, math.Round(v/rel.Grid())*rel.Grid(), v, "on the grid")
	}

	sym, err := a.Gaussian("sym", 1, 6, b)
	require.NoError(t, err)
	m := mat.NewSymDense(3, []float64{1, 2, 3, 2, 4, 5, 3, 5, 6})
	m2 := mat.NewSymDense(3, nil)
	m2.CopySym(m)
	require.NoError(t, sym.AddSym(NewSeededSource(3), m))
	NewSeededSource(3).AddSymmetricGaussian(m2, sym.Scale())
	assert.True(t, mat.Equal(m, m2))

	lap, err := a.Laplace("counts", 1, 3, Budget{Noise: NoiseZCDP, Rho: 0.125})
	require.NoError(t, err)
	assert.InDelta(t, 0.5, lap.Step().Epsilon, 1e-15, "ε with ε²/2 = ρ")
	v := []float64{1, 2, 3}
	w := append([]float64(nil), v...)
	require.NoError(t, lap.Add(NewSeededSource(5), v))
	NewSeededSource(5).AddLaplace(w, lap.Scale())
	assert.Equal(t, w, v)
	assert.Empty(t, a.Undrawn())
}

func TestReleaseAddDenseNoisesOnlyTheView(t *testing.T) {
	a := newAcct(t, zcdpGrant)
	big := mat.NewDense(3, 4, nil)
	view := big.Slice(0, 2, 1, 3).(*mat.Dense)
	r, err := a.Gaussian("block", 1, 4, Budget{Noise: NoiseZCDP, Rho: 0.1})
	require.NoError(t, err)
	require.NoError(t, r.AddDense(NewSeededSource(1), view))
	for i := 0; i < 3; i++ {
		for j := 0; j < 4; j++ {
			inView := i < 2 && j >= 1 && j < 3
			assert.Equal(t, inView, big.At(i, j) != 0, "(%d, %d)", i, j)
		}
	}
}

func TestReleaseRefusesMisuse(t *testing.T) {
	a := newAcct(t, approxGrant)
	b := Budget{Noise: NoiseZCDP, Rho: 0.01}
	src := NewSeededSource(1)

	r, err := a.Gaussian("mean", 1, 3, b)
	require.NoError(t, err)
	assert.Equal(t, []string{"mean"}, a.Undrawn())
	err = r.Add(src, []float64{1, 2})
	assert.ErrorIs(t, err, ErrDraw)
	assert.ErrorContains(t, err, "has 2 values, but the step was declared for 3")
	assert.ErrorIs(t, r.Add(nil, []float64{1, 2, 3}), ErrDraw)
	assert.ErrorIs(t, r.AddSym(src, mat.NewSymDense(3, nil)), ErrDraw, "3×3 symmetric has 6 values")
	assert.Equal(t, []string{"mean"}, a.Undrawn(), "refused draws draw nothing")
	require.NoError(t, r.AddParts(src, []float64{1}, []float64{2, 3}))
	assert.Empty(t, a.Undrawn())
	err = r.Add(src, []float64{1, 2, 3})
	assert.ErrorIs(t, err, ErrDraw)
	assert.ErrorContains(t, err, "already drawn")

	ex, err := a.Exponential("pick", 2, Budget{Noise: NoisePure, Epsilon: 0.2})
	require.NoError(t, err)
	assert.Equal(t, 0.05, ex.Beta())
	boom := errors.New("boom")
	err = ex.Sample(func(beta float64) error { assert.Equal(t, 0.05, beta); return boom })
	assert.ErrorIs(t, err, boom)
	assert.ErrorIs(t, ex.Sample(func(float64) error { return nil }), ErrDraw)

	n := len(a.Steps())
	_, err = a.Gaussian("cov", 1, 3, Budget{Noise: NoisePure, Epsilon: 0.1})
	assert.ErrorIs(t, err, ErrInvalidBudget)
	_, err = a.Laplace("cov", 1, 3, Budget{Noise: NoiseZCDP, Rho: 0.01, Mechanism: MechGaussian})
	assert.ErrorIs(t, err, ErrInvalidBudget)
	_, err = a.Gaussian("cov", 1, 0, b)
	assert.ErrorIs(t, err, ErrInvalidBudget)
	_, err = a.Gaussian("cov", 1, 3, Budget{Noise: NoiseZCDP, Rho: 100})
	assert.ErrorIs(t, err, ErrOverBudget)
	assert.Len(t, a.Steps(), n, "refused declarations record nothing")
	assert.Empty(t, a.Undrawn())
}

func TestWithoutRelease(t *testing.T) {
	a := newAcct(t, zcdpGrant)
	_, err := a.spendGaussianRho("legacy", 1, 1, 0.1)
	require.NoError(t, err)
	r, err := a.Gaussian("new", 1, 1, Budget{Noise: NoiseZCDP, Rho: 0.1})
	require.NoError(t, err)
	assert.Equal(t, []string{"legacy"}, a.WithoutRelease())
	assert.Equal(t, []string{"new"}, a.Undrawn())
	require.NoError(t, r.Add(NewSeededSource(1), []float64{0}))
	assert.Empty(t, a.Undrawn())
}

func TestExponentialMonotone(t *testing.T) {
	a := newAcct(t, Grant{Kind: GrantPure, Epsilon: 1})
	r, err := a.ExponentialMonotone("pick", 2, Budget{Noise: NoisePure, Epsilon: 0.5})
	require.NoError(t, err)
	assert.Equal(t, 0.25, r.Beta(), "β = ε/Δ")
	st := r.Step()
	assert.Equal(t, CalibMonotone, st.Calibration)
	assert.Equal(t, RhoOfExponential(0.5), st.Rho)
	assert.Equal(t, []string{"pick"}, a.Undrawn())
	require.NoError(t, r.Sample(func(float64) error { return nil }))
	_, err = a.ExponentialMonotone("pick", 0, Budget{Noise: NoisePure, Epsilon: 0.5})
	assert.ErrorIs(t, err, ErrInvalidBudget)
}
