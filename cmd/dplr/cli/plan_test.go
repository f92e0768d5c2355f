package cli

import (
	"bytes"
	"encoding/json"
	"os"
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

// TestFitWarnsNearRandomOnWideData: a pure-ε fit on wide data (pca-amin,
// 1000×784, ε = 0.5, rank 10: above the dry runs' caps) prints the
// near-random warning even with --quiet, before anything is reserved: a
// fit refused there (its output cannot be written) has warned and spent
// nothing. The public screen decided it (the kept check says so).
func TestFitWarnsNearRandomOnWideData(t *testing.T) {
	plug, home := transformPlugins(t), t.TempDir()
	data := filepath.Join(t.TempDir(), "wide")
	g := dplr(t, "", "gen", "spiked", "--out", data, "--set", "n=1000", "--set", "p=784", "--seed", "7")
	require.Equal(t, ExitOK, g.code, g.stderr)
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	var so, se bytes.Buffer
	code := Main([]string{"fit", "--plugin-dir", plug, "--home", home, "pca-amin", "--data", data,
		"--epsilon", "0.5", "--set", "rank=10", "--out", filepath.Join(file, "o"), "--quiet"}, &so, &se)
	assert.NotEqual(t, ExitOK, code)
	assert.Contains(t, se.String(), "dplr: warning: the plan expects a result near random")
	assert.Empty(t, history(t, home, data))
	kept, err := filepath.Glob(filepath.Join(home, "checks", "*.json"))
	require.NoError(t, err)
	require.Len(t, kept, 1)
	check, err := os.ReadFile(kept[0])
	require.NoError(t, err)
	assert.Contains(t, string(check), "decided by the public screen, without a dry run: near random")
}
