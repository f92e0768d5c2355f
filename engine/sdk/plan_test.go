package sdk

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
)

// TestPlanOf checks the plan on a fake estimator and reference: the steps
// are those a fit takes, a sensitivity is reported only when it does not
// depend on the data, the score is computed against the reference's truth
// (overlap, or captured variance when the reference has a covariance),
// and nothing runs above the cap or on a refused request.
func TestPlanOf(t *testing.T) {
	e := func(j int) *mat.Dense { u := mat.NewDense(4, 1, nil); u.Set(j, 0, 1); return u }
	ref := func(sigma *mat.Dense) Reference {
		return func(s Shape, rank int, scale float64, seed uint64) (ReferenceData, error) {
			x := mat.NewDense(s.N, s.P, nil)
			for i := range s.N {
				x.Set(i, i%s.P, scale*float64(i+1))
			}
			return ReferenceData{Data: &data.Dataset{Kind: data.Rows, X: x}, U: e(0), Sigma: sigma}, nil
		}
	}
	// fit spends a step of public sensitivity 1 and one whose sensitivity
	// is the data's largest entry, then releases u (none when nil).
	fit := func(u *mat.Dense) func(context.Context, *Run) (*Result, error) {
		return func(_ context.Context, run *Run) (*Result, error) {
			b := privacy.Budget{Noise: privacy.NoiseZCDP, Rho: 0.25}
			if _, err := run.Acct.Gaussian("public", 1, 1, b); err != nil {
				return nil, err
			}
			if _, err := run.Acct.Gaussian("from the data", mat.Max(run.Data.X), 1, b); err != nil {
				return nil, err
			}
			res := &Result{}
			if u != nil {
				res.AddMatrix("U", u, Public, "subspace")
			}
			return res, nil
		}
	}
	info := Info{Name: "fake", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantZCDP},
		Params: []ParamSpec{{Name: "rank", Type: Int, Default: "1", Min: Bound(1)}}}
	grant := privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.5}
	small := Shape{Kind: data.Rows, N: 8, P: 4}
	cases := []struct {
		name         string
		u            *mat.Dense
		sigma        *mat.Dense
		raw          map[string]string
		shape        Shape
		wantErr      bool
		scored, near bool
		score, rnd   float64
	}{
		{name: "true subspace", u: e(0), shape: small, scored: true, score: 1, rnd: 0.25},
		{name: "orthogonal subspace", u: e(1), shape: small, scored: true, near: true, score: 0, rnd: 0.25},
		{name: "captured variance", u: e(1), sigma: mat.NewDense(4, 4, []float64{3, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}),
			shape: small, scored: true, near: true, score: 1.0 / 3, rnd: 0.25 * 6 / 3},
		{name: "no subspace released", shape: small},
		{name: "one row, its own stand-in", u: e(1), shape: Shape{Kind: data.Rows, N: 1, P: 4}, scored: true, near: true, score: 0, rnd: 0.25},
		{name: "above the cap", u: e(0), shape: Shape{Kind: data.Rows, N: 100000, P: 100}, scored: true},
		{name: "too many columns (p³ above the cap)", u: e(0), shape: Shape{Kind: data.Rows, N: 10, P: 1100}},
		{name: "refused request", u: e(0), raw: map[string]string{"rank": "0"}, shape: small, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			est := fakeEst{info: info, fit: fit(tc.u)}
			p, err := PlanOf(context.Background(), est, tc.raw, grant, tc.shape, ref(tc.sigma), PlanFull)
			if tc.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.scored, p.Scored, p.Note)
			assert.Equal(t, tc.near, p.NearRandom)
			if tc.shape.P == 1100 {
				assert.Empty(t, p.Steps, "nothing runs")
				assert.Contains(t, p.Note, "not computed")
				return
			}
			if tc.shape.N > 8 {
				// One run on fewer rows for the steps (no sensitivity), and
				// the indicator from runs on fewer rows at a scaled budget.
				require.Len(t, p.Steps, 2, p.Note)
				assert.Zero(t, p.Steps[0].Sensitivity)
				assert.InDelta(t, 1/math.Sqrt(2*0.25), p.Steps[0].Multiplier, 1e-9)
				assert.Contains(t, p.Note, "budget scaled")
				assert.InDelta(t, 1.0, p.ExpectedScore, 1e-12)
				return
			}
			require.Len(t, p.Steps, 2)
			sigma := 1 / math.Sqrt(2*0.25) // σ = Δ/√(2ρ) per unit of sensitivity
			assert.InDelta(t, 1.0, p.Steps[0].Sensitivity, 1e-9, "a public sensitivity is reported (with its grid allowance)")
			assert.InDelta(t, sigma, p.Steps[0].Multiplier, 1e-9)
			assert.Zero(t, p.Steps[1].Sensitivity, "a data-dependent sensitivity is not")
			assert.Zero(t, p.Steps[1].Scale)
			assert.InDelta(t, sigma, p.Steps[1].Multiplier, 1e-9, "the multiplier does not depend on the data")
			assert.InDelta(t, 0.25, p.Steps[1].Rho, 1e-15)
			if tc.scored {
				assert.InDelta(t, tc.score, p.ExpectedScore, 1e-12)
				assert.InDelta(t, tc.rnd, p.RandomScore, 1e-12)
			}
		})
	}
}

// boundRank reads the resolved rank from bound options, through pointers,
// embedding (exported or not) and an option set, and 0 where there is none.
func TestBoundRank(t *testing.T) {
	type inner struct{ Rank }
	type outer struct {
		inner
		Other int
	}
	type named struct{ Inner inner }
	for _, tc := range []struct {
		opts any
		want int
	}{
		{&struct{ Rank }{Rank{Value: 9}}, 9},
		{struct{ Rank }{Rank{Value: 3}}, 3},
		{OptionSet{&struct{ Rank }{Rank{Value: 4}}}, 4},
		{&outer{inner: inner{Rank{Value: 7}}}, 7},
		{&named{Inner: inner{Rank{Value: 5}}}, 0},
		{nil, 0},
		{42, 0},
	} {
		assert.Equal(t, tc.want, boundRank(tc.opts), "%#v", tc.opts)
	}
}

// Where no dry run fits the caps, dplr plan still lists the steps of a
// Planner's declared plan: each share's steps with their budgets, without
// sensitivities; a fit's pre-flight (PlanIndicator) gets none.
func TestPlanOfDeclaredAboveTheCap(t *testing.T) {
	wide := Shape{Kind: data.Rows, N: 10, P: 1100}
	rho := privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.5}
	p, err := PlanOf(context.Background(), plannedEst{}, map[string]string{"auto": "true"}, rho, wide, nil, PlanFull)
	require.NoError(t, err)
	require.Len(t, p.Steps, 2, p.Note)
	assert.Equal(t, "moment", p.Steps[0].Name)
	assert.Equal(t, privacy.MechGaussian, p.Steps[0].Mechanism)
	assert.InDelta(t, 0.45, p.Steps[0].Rho, 1e-12, "what the clip share leaves")
	assert.Equal(t, "clip quantile", p.Steps[1].Name)
	assert.Equal(t, privacy.MechExponential, p.Steps[1].Mechanism)
	assert.InDelta(t, 0.05, p.Steps[1].Rho, 1e-12)
	assert.Zero(t, p.Steps[0].Sensitivity)
	assert.Equal(t, privacy.NoiseZCDP, p.Accounting)
	assert.Contains(t, p.Note, "declared plan")
	assert.False(t, p.Scored)

	p, err = PlanOf(context.Background(), plannedEst{}, nil, rho, wide, nil, PlanIndicator)
	require.NoError(t, err)
	assert.Empty(t, p.Steps)
}

// The rows a dry run may have keep its work within the caps: in a fit's
// pre-flight the rows' work and p³ together stay within PlanMaxWork (as
// they always did), for dplr plan each within its own cap; p³ above the
// cap leaves no row.
func TestRowsForKeepsWithinTheCaps(t *testing.T) {
	for _, tc := range []struct {
		p     float64
		share float64
		mode  PlanMode
		none  bool
	}{
		{30, 1, PlanIndicator, false},
		{300, 1, PlanIndicator, false},
		{300, 1.0 / 8, PlanIndicator, true},
		{370, 1, PlanIndicator, true},
		{300, 1, PlanFull, false},
		{784, 1, PlanFull, false},
		{784, 1.0 / 8, PlanFull, true},
		{1100, 1, PlanFull, true},
	} {
		perRow, p3 := tc.p*min(tc.p, 100), tc.p*tc.p*tc.p
		m := rowsFor(tc.share, perRow, p3, tc.mode)
		if tc.none {
			assert.Less(t, m, 2, "p=%v share=%v mode=%v", tc.p, tc.share, tc.mode)
			continue
		}
		require.GreaterOrEqual(t, m, 2, "p=%v share=%v mode=%v", tc.p, tc.share, tc.mode)
		assert.LessOrEqual(t, workShare(m, perRow, p3, tc.mode), tc.share+1e-12)
		assert.Greater(t, workShare(m+1, perRow, p3, tc.mode), tc.share, "the most rows that fit")
		if tc.mode == PlanIndicator {
			assert.LessOrEqual(t, float64(m)*perRow+p3, tc.share*PlanMaxWork)
		}
	}
}
