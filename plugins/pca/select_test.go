package pca

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// TestCapturedScorer: the score is the mean over held-out rows of
// ‖Uᵀy‖²/‖y‖² with y = x − mean (1 for y = 0), each row's from its own row
// only.
func TestCapturedScorer(t *testing.T) {
	res := &sdk.Result{}
	res.AddMatrix("U", mat.NewDense(3, 1, []float64{1, 0, 0}), sdk.Public, "")
	res.AddMatrix("mean", mat.NewDense(1, 3, []float64{1, 1, 0}), sdk.Public, "")
	held := &data.Dataset{Kind: data.Rows, X: mat.NewDense(4, 3, []float64{
		4, 1, 0, // y = (3, 0, 0): 1
		1, 3, 0, // y = (0, 2, 0): 0
		3, 3, 0, // y = (2, 2, 0): 1/2
		1, 1, 0, // y = 0: 1
	})}
	got, err := capturedScorer(res, map[string]string{"center": "private"})(context.Background(), held)
	require.NoError(t, err)
	assert.InDelta(t, (1+0+0.5+1)/4.0, got, 1e-12)
	// One row replaced moves the mean by at most 1/m.
	held.X.SetRow(1, []float64{9, 1, 0}) // y = (8, 0, 0): 1
	moved, err := capturedScorer(res, map[string]string{"center": "private"})(context.Background(), held)
	require.NoError(t, err)
	assert.InDelta(t, got+0.25, moved, 1e-12)
}

// TestAnalyzeGaussSelection: a selection of pca-analyze-gauss is one run
// whose steps are every candidate's fit, one exponential step of
// sensitivity 1/m and the final fit, within the grant; with a budget so
// large that the noise vanishes it picks the rank that captures most
// (the largest).
func TestAnalyzeGaussSelection(t *testing.T) {
	g := spiked(t, 1000, 8, 2, "20,10", "gaussian", 3)
	grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	_, one := fit(t, AnalyzeGauss{}, g, map[string]string{"rank": "2"}, grant, 1)
	res, acct := fit(t, AnalyzeGauss{}, g, map[string]string{"rank": "2", "select": "clip_quantile=0.5,0.75,0.9"}, grant, 1)
	steps := acct.Steps()
	require.Len(t, steps, 4*len(one.Steps())+1)
	var exp int
	for _, s := range steps {
		if strings.HasPrefix(s.Name, "select:") {
			exp++
			assert.InDelta(t, 1.0/300, s.Sensitivity, 1e-12)
		}
	}
	assert.Equal(t, 1, exp)
	assert.LessOrEqual(t, res.Guarantee.Epsilon, 1+1e-9)
	assert.Contains(t, []float64{0.5, 0.75, 0.9}, scalar(t, res, "selected_clip_quantile"))
	assert.Empty(t, acct.Undrawn())

	big := privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1e12}
	for seed := uint64(0); seed < 5; seed++ {
		res, _ := fit(t, AnalyzeGauss{}, g, map[string]string{"select": "rank=1,3,2", "clip": "100"}, big, seed)
		assert.Equal(t, 3.0, scalar(t, res, "selected_rank"))
		assert.Equal(t, 3, matrix(t, res, "U").RawMatrix().Cols)
	}
}

// TestSelectionPlan: the plan of a selection lists every step the
// selection takes (what dplr plan shows before anything is reserved).
func TestSelectionPlan(t *testing.T) {
	g := spiked(t, 400, 6, 2, "20,10", "gaussian", 3)
	grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	raw := map[string]string{"rank": "2", "select": "clip_quantile=0.5,0.9"}
	plan, err := sdk.PlanOf(context.Background(), AnalyzeGauss{}, raw, grant, sdk.ShapeOf(g.Data), gen.Reference, sdk.PlanFull)
	require.NoError(t, err)
	if plan.Late() {
		t.Skipf("the dry runs did not finish within the plan's own time limit on this machine: %s", plan.Note)
	}
	seed := uint64(1)
	_, acct, err := sdk.RunLocal(context.Background(), AnalyzeGauss{}, g.Data, raw, grant, sdk.LocalOptions{Seed: &seed})
	require.NoError(t, err)
	require.Len(t, plan.Steps, len(acct.Steps()), plan.Note)
	for i, s := range acct.Steps() {
		assert.Equal(t, s.Name, plan.Steps[i].Name)
		assert.InDelta(t, s.Rho, plan.Steps[i].Rho, 1e-12)
	}
}
