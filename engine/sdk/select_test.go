package sdk

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
)

// levelOptions are the options of levelEst: one parameter to select.
type levelOptions struct {
	Level float64 `param:"level" default:"0.5" min:"0" max:"1" doc:"the candidate's level"`
	Steps int     `param:"steps" default:"1" min:"1" doc:"Gaussian steps of a fit"`
	Pure  bool    `param:"pure" default:"false" doc:"plan a pure split of ε instead (which a selection cannot split)"`
	Noise `choices:"zcdp,exact" default:"zcdp"`
	Selection
}

// Plan implements Planner: Steps Gaussian steps.
func (o *levelOptions) Plan(Shape, privacy.Grant) (PlanSpec, error) {
	if o.Pure {
		return PlanSpec{Noise: privacy.NoisePure, Pure: true, Shares: []privacy.Share{{Name: "mean", Weight: 1, Mechanism: privacy.MechLaplace}}}, nil
	}
	return PlanSpec{Noise: o.Noise.Value, Shares: []privacy.Share{{Name: "mean", Rest: true, Steps: o.Steps, Mechanism: privacy.MechGaussian}}}, nil
}

// levelEst releases the noisy mean of the rows' first column in Steps
// Gaussian steps of sensitivity 1/n, and scores every held-out row 1 −
// |level − 0.7|, so that the candidate 0.7 is the best.
type levelEst struct{}

func (levelEst) Info() Info {
	return Info{Name: "level", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantZCDP, privacy.GrantApprox, privacy.GrantPure}, Options: levelOptions{}}
}

func (e levelEst) Fit(ctx context.Context, run *Run) (*Result, error) {
	res, _, err := e.SelectFit(ctx, run)
	return res, err
}

func (levelEst) SelectFit(_ context.Context, run *Run) (*Result, Scorer, error) {
	o := Opts[levelOptions](run)
	n, _ := run.Data.X.Dims()
	b, err := run.Plan.Budget("mean")
	if err != nil {
		return nil, nil, err
	}
	res := &Result{}
	for s := 0; s < o.Steps; s++ {
		rel, err := run.Acct.Gaussian("mean", 1/float64(n), 1, b)
		if err != nil {
			return nil, nil, err
		}
		v := []float64{mat.Sum(run.Data.X.ColView(0)) / float64(n)}
		if err := rel.Add(run.Rand, v); err != nil {
			return nil, nil, err
		}
	}
	res.AddScalar("level", o.Level, Public, "level")
	res.AddScalar("rows", float64(n), Public, "rows fitted")
	score := func(_ context.Context, held *data.Dataset) (float64, error) {
		return 1 - math.Abs(o.Level-0.7), nil
	}
	return res, score, nil
}

func levelData(n int) *data.Dataset {
	x := mat.NewDense(n, 2, nil)
	for i := 0; i < n; i++ {
		x.Set(i, 0, float64(i%3)/3)
	}
	return &data.Dataset{Kind: data.Rows, X: x}
}

func scalarOf(t *testing.T, res *Result, name string) float64 {
	t.Helper()
	for _, s := range res.Scalars {
		if s.Name == name {
			return s.Value
		}
	}
	t.Fatalf("no scalar %s", name)
	return 0
}

// TestSelectionCharge: the run declares K candidate fits of ρ·share·(4/5)/K
// each on the fitting rows, one exponential step of ε = √(8ρ·share/5) and
// sensitivity 1/m, and the final fit on every row with ρ·(1 − share): in
// all, exactly the grant's ρ.
func TestSelectionCharge(t *testing.T) {
	const n, rho, share = 100, 0.5, 0.3
	seed := uint64(1)
	grant := privacy.Grant{Kind: privacy.GrantZCDP, Rho: rho}
	res, acct, err := RunLocal(context.Background(), levelEst{}, levelData(n), map[string]string{"select": "level=0.1,0.7,0.9", "steps": "2"}, grant, LocalOptions{Seed: &seed})
	require.NoError(t, err)
	steps := acct.Steps()
	require.Len(t, steps, 3*2+1+2)
	var total float64
	for i, s := range steps {
		switch {
		case i < 6:
			assert.True(t, strings.HasPrefix(s.Name, "candidate "), s.Name)
			assert.InDelta(t, rho*share*0.8/3/2, s.Rho, 1e-12, s.Name)
			assert.InDelta(t, 1.0/70, s.Sensitivity, 1e-12) // 70 fitting rows
		case i == 6:
			assert.Equal(t, privacy.MechExponential, s.Mechanism)
			assert.InDelta(t, math.Sqrt(8*rho*share*0.2), s.Epsilon, 1e-12)
			assert.InDelta(t, 1.0/30, s.Sensitivity, 1e-12) // 30 held-out rows
		default:
			assert.True(t, strings.HasPrefix(s.Name, "final/"), s.Name)
			assert.InDelta(t, rho*(1-share)/2, s.Rho, 1e-12)
			assert.InDelta(t, 1.0/n, s.Sensitivity, 1e-12)
		}
		total += s.Rho
	}
	assert.InDelta(t, rho, total, 1e-12)
	ach, err := privacy.Compose(grant, steps)
	require.NoError(t, err)
	assert.InDelta(t, rho, ach.Rho, 1e-9)
	assert.Empty(t, acct.Undrawn())
	// The result names the chosen candidate and every candidate.
	assert.Equal(t, float64(n), scalarOf(t, res, "rows"), "the final fit uses every row")
	assert.Equal(t, scalarOf(t, res, "level"), scalarOf(t, res, "selected_level"))
	assert.InDelta(t, rho*share, scalarOf(t, res, "rho_selection"), 1e-12)
	var cands []float64
	for _, s := range res.Series {
		if s.Name == "candidates_level" {
			cands = s.Values
		}
	}
	assert.Equal(t, []float64{0.1, 0.7, 0.9}, cands)
}

// TestSelectionPicksBest: with a budget so large that the exponential
// mechanism is almost an argmax, the best candidate is chosen every time;
// with a tiny one the choice is near uniform.
func TestSelectionPicksBest(t *testing.T) {
	big := privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1e9}
	for seed := uint64(0); seed < 20; seed++ {
		res, _, err := RunLocal(context.Background(), levelEst{}, levelData(50), map[string]string{"select": "level=0.1,0.9,0.7,0.3"}, big, LocalOptions{Seed: &seed})
		require.NoError(t, err)
		assert.Equal(t, 0.7, scalarOf(t, res, "selected_level"))
		assert.Equal(t, 3.0, scalarOf(t, res, "selected_candidate"))
	}
	tiny := privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1e-12}
	picked := map[float64]int{}
	for seed := uint64(0); seed < 200; seed++ {
		res, _, err := RunLocal(context.Background(), levelEst{}, levelData(50), map[string]string{"select": "level=0.1,0.7"}, tiny, LocalOptions{Seed: &seed})
		require.NoError(t, err)
		picked[scalarOf(t, res, "selected_level")]++
	}
	assert.InDelta(t, 100, picked[0.1], 40) // binomial(200, 1/2): sd 7
}

// TestSelectionRefusals: what the request alone shows to be impossible is
// refused before the first step, as a BadRequest (the host reserves
// nothing then).
func TestSelectionRefusals(t *testing.T) {
	d := levelData(40)
	zcdp := privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1}
	cases := []struct {
		name  string
		raw   map[string]string
		grant privacy.Grant
		d     *data.Dataset
		want  string
	}{
		{"a pure grant cannot pay for the Gaussian fits", map[string]string{"select": "level=0.1,0.7"}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1}, d, "private selection"},
		{"unknown parameter", map[string]string{"select": "levl=0.1,0.7"}, zcdp, d, "not a parameter that can be selected"},
		{"bad value", map[string]string{"select": "level=0.1,7"}, zcdp, d, "candidate level=7"},
		{"also given alone", map[string]string{"select": "level=0.1,0.7", "level": "0.2"}, zcdp, d, "also given"},
		{"fits planned differently", map[string]string{"select": "steps=1,2"}, zcdp, d, "plan their fits differently"},
		{"malformed", map[string]string{"select": "level"}, zcdp, d, "PARAM=v1,v2"},
		{"too many", map[string]string{"select": "level=0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8;steps=1,2,3,4,5,6,7,8"}, zcdp, d, "more than 64"},
		{"one unit", map[string]string{"select": "level=0.1,0.7"}, zcdp, levelData(1), "at least 2 units"},
		{"a pure split", map[string]string{"select": "level=0.1,0.7", "pure": "true"}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1}, d, "cannot be split among candidates"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, acct, err := RunLocal(context.Background(), levelEst{}, tc.d, tc.raw, tc.grant, LocalOptions{})
			require.Error(t, err)
			assert.True(t, IsBadRequest(err), "%v", err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Nil(t, acct, "refused before the accountant exists")
			_, _, _, err = PrepareDeclared(levelEst{}.Info(), tc.raw, ShapeOf(tc.d), tc.grant)
			require.Error(t, err, "the pre-flight answer refuses too")
		})
	}
	// Remote data cannot serve the subsets.
	_, err := PassesOf(levelEst{}, mustPrepare(t, map[string]string{"select": "level=0.1,0.7"}), Shape{Kind: data.Rows, N: 40, P: 2, Remote: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--engine beam")
}

func mustPrepare(t *testing.T, raw map[string]string) any {
	t.Helper()
	opts, _, err := Prepare(levelEst{}.Info(), raw, ShapeOf(levelData(40)))
	require.NoError(t, err)
	return opts
}

// TestSubsetOf: rows and whole users are taken with their side columns.
func TestSubsetOf(t *testing.T) {
	u := &data.Dataset{Kind: data.Users, X: mat.NewDense(5, 1, []float64{0, 1, 2, 3, 4}), Y: []float64{0, 1, 2, 3, 4}, UserStart: []int{0, 2, 3, 5}, UserIDs: []int64{7, 8, 9}}
	s := subsetOf(u, []int{0, 2})
	assert.Equal(t, []int{0, 2, 4}, s.UserStart)
	assert.Equal(t, []int64{7, 9}, s.UserIDs)
	assert.Equal(t, []float64{0, 1, 3, 4}, s.Y)
	assert.Equal(t, []float64{0, 1, 3, 4}, s.X.RawMatrix().Data)
	r := subsetOf(levelData(6), []int{1, 5})
	assert.Equal(t, []float64{1.0 / 3, 0, 2.0 / 3, 0}, r.X.RawMatrix().Data)
}

// TestSelectionFootprint: a selection's memory estimate counts the copy of
// the rows it splits (n·(p+1) float64s) beside the fit's own, so the host
// bounds what the selection holds, not only what one fit holds.
func TestSelectionFootprint(t *testing.T) {
	s := Shape{Kind: data.Rows, N: 1000, P: 2}
	_, base, err := Prepare(levelEst{}.Info(), map[string]string{}, s)
	require.NoError(t, err)
	_, sel, err := Prepare(levelEst{}.Info(), map[string]string{"select": "level=0.1,0.7"}, s)
	require.NoError(t, err)
	assert.Equal(t, int64(1000*3*8), sel-base)
}
