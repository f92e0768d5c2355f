package sdk

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
)

type declaringOptions struct {
	Auto bool `param:"auto" default:"false" doc:"use a private quantile"`
	Mode string
}

func (o *declaringOptions) Plan(Shape, privacy.Grant) (PlanSpec, error) {
	switch o.Mode {
	case "panic":
		panic("boom")
	case "error":
		return PlanSpec{}, errors.New("no plan for this shape")
	case "unknown":
		return PlanSpec{Noise: privacy.NoiseZCDP, Shares: []privacy.Share{{Name: "q", Weight: 1, Mechanism: "quantum"}}}, nil
	}
	shares := []privacy.Share{{Name: "moment", Rest: true, Mechanism: privacy.MechGaussian}}
	if o.Auto {
		shares = append(shares, privacy.Share{Name: "clip quantile", Weight: 0.1, Mechanism: privacy.MechExponential},
			privacy.Share{Name: "mean", Weight: 0.1, Mechanism: privacy.MechGaussian})
	}
	return PlanSpec{Noise: privacy.NoiseZCDP, Shares: shares}, nil
}

type evaluateOnly struct {
	Eval bool `param:"evaluate2" default:"false" doc:"evaluate"`
}

var approx = privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}

func TestDeclareMergesAndSorts(t *testing.T) {
	info := Info{Name: "d", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantApprox}, Options: declaringOptions{}}
	_, _, d, err := PrepareDeclared(info, map[string]string{"auto": "true"}, Shape{Kind: data.Rows, N: 10, P: 2}, approx)
	require.NoError(t, err)
	assert.True(t, d.Declared)
	assert.Equal(t, []MechanismUse{{privacy.MechExponential, "clip quantile"}, {privacy.MechGaussian, "moment; mean"}}, d.Uses)
	assert.Equal(t, []privacy.Mechanism{privacy.MechExponential, privacy.MechGaussian}, d.Mechanisms())
	assert.False(t, d.GaussianOnly())
	assert.True(t, d.Allows(privacy.MechExponential))
	assert.False(t, d.Allows(privacy.MechLaplace))
	assert.Equal(t, "exponential (clip quantile), gaussian (moment; mean)", d.String())
	err = d.CheckSteps([]privacy.Step{{Name: "m", Mechanism: privacy.MechGaussian}, {Name: "eigenvalues", Mechanism: privacy.MechLaplace}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `privacy step 2 ("eigenvalues") uses the laplace mechanism`)

	_, _, d, err = PrepareDeclared(info, nil, Shape{Kind: data.Rows, N: 10, P: 2}, approx)
	require.NoError(t, err)
	assert.True(t, d.GaussianOnly())

	// An OptionSet merges its members' declarations; a member without the
	// hook declares nothing.
	set := info
	set.Options = OptionSet{declaringOptions{}, evaluateOnly{}}
	_, _, d, err = PrepareDeclared(set, map[string]string{"auto": "true"}, Shape{Kind: data.Rows}, approx)
	require.NoError(t, err)
	assert.Equal(t, []privacy.Mechanism{privacy.MechExponential, privacy.MechGaussian}, d.Mechanisms())
}

func TestDeclareUndeclaredAndNonPrivate(t *testing.T) {
	info := Info{Name: "u", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantApprox}, Options: evaluateOnly{}}
	_, _, d, err := PrepareDeclared(info, nil, Shape{Kind: data.Rows}, approx)
	require.NoError(t, err)
	assert.False(t, d.Declared)
	assert.True(t, d.Allows(privacy.MechLaplace), "undeclared: every step allowed, as before")
	assert.NoError(t, d.CheckSteps([]privacy.Step{{Mechanism: privacy.MechLaplace}}))
	assert.False(t, d.GaussianOnly())
	assert.Equal(t, "undeclared", d.String())

	info.NonPrivate = true
	_, _, d, err = PrepareDeclared(info, nil, Shape{Kind: data.Rows}, approx)
	require.NoError(t, err)
	assert.True(t, d.Declared)
	assert.Empty(t, d.Uses)
	assert.Equal(t, "no privacy mechanism", d.String())
}

func TestDeclareRefusals(t *testing.T) {
	for mode, want := range map[string]string{
		"panic":   "options hook panicked: boom",
		"error":   "no plan for this shape",
		"unknown": `share "q" names no known privacy mechanism ("quantum"`,
	} {
		t.Run(mode, func(t *testing.T) {
			_, err := Declare(Info{Name: "d"}, &declaringOptions{Mode: mode}, Shape{}, approx)
			require.Error(t, err)
			assert.True(t, IsBadRequest(err))
			assert.Contains(t, err.Error(), want)
		})
	}
}

func TestUsesOfShares(t *testing.T) {
	got := UsesOf(privacy.Share{Name: "clip", Mechanism: privacy.MechExponential}, privacy.Share{Name: "free"},
		privacy.Share{Name: "moment", Mechanism: privacy.MechGaussian})
	assert.Equal(t, []MechanismUse{{privacy.MechExponential, "clip"}, {privacy.MechGaussian, "moment"}}, got)
}

// plannedOptions plan a Gaussian moment and, with auto, an exponential
// clip quantile.
type plannedOptions struct {
	Auto  bool   `param:"auto" default:"false" doc:"use a private quantile"`
	Mech  string `param:"mech" default:"gaussian" doc:"the moment's mechanism"`
	Noise `choices:"zcdp,pure,classical" default:"zcdp"`
}

func (o *plannedOptions) Plan(Shape, privacy.Grant) (PlanSpec, error) {
	shares := []privacy.Share{{Name: "moment", Rest: true, Mechanism: privacy.Mechanism(o.Mech)}}
	if o.Auto {
		shares = append(shares, privacy.Share{Name: "clip quantile", Weight: 0.1, Mechanism: privacy.MechExponential})
	}
	return PlanSpec{Noise: o.Noise.Value, Shares: shares}, nil
}

// plannedEst releases one Gaussian mean from run.Plan's moment share and
// reports that share's per-step ρ.
type plannedEst struct{}

func (plannedEst) Info() Info {
	return Info{Name: "planned", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantApprox, privacy.GrantZCDP}, Options: plannedOptions{}}
}

func (plannedEst) Fit(_ context.Context, run *Run) (*Result, error) {
	b, err := run.Plan.Budget("moment")
	if err != nil {
		return nil, err
	}
	rel, err := run.Acct.Gaussian("moment", 1, 1, b)
	if err != nil {
		return nil, err
	}
	if err := rel.Add(run.Rand, []float64{0}); err != nil {
		return nil, err
	}
	res := &Result{}
	res.AddScalar("rho", b.Rho, Public, "the moment's ρ")
	return res, nil
}

// A Planner's declaration is its shares' mechanisms, its plan is checked
// against the grant before anything is reserved, and the run spends the
// plan the SDK built from the same answer.
func TestPlannerDeclaresChecksAndRuns(t *testing.T) {
	info := plannedEst{}.Info()
	shape := Shape{Kind: data.Rows, N: 10, P: 2}
	_, _, d, err := PrepareDeclared(info, map[string]string{"auto": "true"}, shape, approx)
	require.NoError(t, err)
	assert.Equal(t, []MechanismUse{{privacy.MechExponential, "clip quantile"}, {privacy.MechGaussian, "moment"}}, d.Uses)

	rho := privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.5}
	seed := uint64(1)
	x := mat.NewDense(10, 2, nil)
	res, acct, err := RunLocal(context.Background(), plannedEst{}, &data.Dataset{Kind: data.Rows, X: x}, map[string]string{"auto": "true"}, rho, LocalOptions{Seed: &seed})
	require.NoError(t, err)
	assert.InDelta(t, 0.45, res.Scalars[0].Value, 1e-12, "the moment gets what the clip share leaves")
	assert.Len(t, acct.Steps(), 1)

	for name, tc := range map[string]struct {
		raw   map[string]string
		grant privacy.Grant
		want  string
	}{
		"gaussian under a pure plan": {map[string]string{"noise": "pure"}, approx, "a pure plan cannot pay for"},
		"classical under a ρ grant":  {map[string]string{"noise": "classical"}, rho, "needs an (ε, δ) grant"},
		"unknown mechanism":          {map[string]string{"mech": "quantum"}, approx, "no known privacy mechanism"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, _, err := PrepareDeclared(info, tc.raw, shape, tc.grant)
			require.Error(t, err)
			assert.True(t, IsBadRequest(err))
			assert.Contains(t, err.Error(), tc.want)
			_, acct, err := RunLocal(context.Background(), plannedEst{}, &data.Dataset{Kind: data.Rows, X: x}, tc.raw, tc.grant, LocalOptions{Seed: &seed})
			require.Error(t, err)
			assert.True(t, IsBadRequest(err))
			assert.Nil(t, acct, "refused before any accountant exists: nothing spent")
		})
	}
}
