package cli

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPlanSpendsNothingAndMatchesFit: `dplr plan` takes fit's arguments,
// lists the steps a fit with the same request takes (same names,
// mechanisms and costs) and leaves the ledger as it was.
func TestPlanSpendsNothingAndMatchesFit(t *testing.T) {
	home, data := t.TempDir(), genSpiked(t)
	args := []string{"example-mean", "--data", data, "--rho", "0.05", "--set", "clip=3", "--json"}
	fit := dplr(t, home, append([]string{"fit", "--out", t.TempDir()}, args...)...)
	require.Equal(t, ExitOK, fit.code, fit.stderr)
	before := history(t, home, data)

	r := dplr(t, home, append([]string{"plan", "--out", t.TempDir()}, args...)...)
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Equal(t, before, history(t, home, data), "plan must not touch the ledger")
	var plan struct {
		Steps []struct {
			Name, Mechanism string
			Rho             float64
			Multiplier      float64 `json:"noise_multiplier"`
		} `json:"steps"`
		Accounting    string  `json:"accounting"`
		ExpectedScore float64 `json:"expected_score"`
		RandomScore   float64 `json:"random_score"`
		NearRandom    bool    `json:"near_random"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &plan), r.stdout)
	var rep FitReport
	require.NoError(t, json.Unmarshal([]byte(fit.stdout), &rep))
	require.Len(t, plan.Steps, len(rep.Privacy.Steps))
	for i, s := range rep.Privacy.Steps {
		assert.Equal(t, s.Name, plan.Steps[i].Name)
		assert.Equal(t, string(s.Mechanism), plan.Steps[i].Mechanism)
		assert.InDelta(t, s.Rho, plan.Steps[i].Rho, 1e-15)
		assert.InDelta(t, s.Scale/s.Sensitivity, plan.Steps[i].Multiplier, 1e-12)
	}
	assert.Equal(t, rep.Privacy.Composition, plan.Accounting)
	assert.False(t, plan.NearRandom, "example-mean releases no subspace: no indicator, no warning")

	txt := dplr(t, home, "plan", "example-mean", "--data", data, "--rho", "0.05", "--set", "clip=3")
	require.Equal(t, ExitOK, txt.code, txt.stderr)
	assert.Contains(t, txt.stdout, "nothing reserved or spent")
	assert.Equal(t, before, history(t, home, data))
}

// A fit keeps its pre-flight check (and plan) in home/checks, and a
// repeated fit of the same request uses it instead of checking and
// dry-running the estimator again (one
// file after either fit); a different request keeps its own.
func TestFitKeepsItsPlan(t *testing.T) {
	home, data := t.TempDir(), genSpiked(t)
	kept := func() []string {
		k, err := filepath.Glob(filepath.Join(home, "checks", "*.json"))
		require.NoError(t, err)
		return k
	}
	for i, clip := range []string{"3", "3", "4"} {
		r := dplr(t, home, "fit", "example-mean", "--data", data, "--rho", "0.05", "--set", "clip="+clip, "--quiet")
		require.Equal(t, ExitOK, r.code, r.stderr)
		assert.Len(t, kept(), []int{1, 1, 2}[i], "after fit %d", i+1)
	}
}
