package cli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Through the command line: budget show states the rule in force; once a
// Gaussian-only first run has fixed the Gaussian-DP filter, a fit whose
// estimator declares an exponential-mechanism step is refused before
// anything is reserved (exit 3, no ρ hint: no other grant would fit), the
// budget is untouched, and Gaussian-only fits still run.
func TestFitRefusedByTheRuleSpendsNothing(t *testing.T) {
	home := t.TempDir()
	data := genSpiked(t)
	t.Setenv("DPLR_BAD_MODE", "declare-exponential")
	r := dplr(t, home, "budget", "set", "--data", data, "--epsilon", "3", "--delta", "1e-6")
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "rule:      undecided")
	fit := func(est string) run {
		return dplr(t, home, "fit", est, "--data", data, "--epsilon", "1", "--delta", "1e-6", "--quiet", "--out", t.TempDir())
	}
	// Declared exponential, but its steps are Gaussian-only: admitted while
	// undecided, and it fixes the Gaussian-DP filter.
	r = fit("bad-declare-exponential")
	require.Equal(t, ExitOK, r.code, r.stderr)
	before := dplr(t, home, "budget", "show", "--data", data, "--json")
	require.Equal(t, ExitOK, before.code, before.stderr)
	var st struct{ Rule string }
	require.NoError(t, json.Unmarshal([]byte(before.stdout), &st))
	assert.Equal(t, "gaussian-dp", st.Rule)
	text := dplr(t, home, "budget", "show", "--data", data)
	assert.Contains(t, text.stdout, "rule:      Gaussian-DP filter")
	assert.Contains(t, text.stdout, "remaining: μ =")

	r = fit("bad-declare-exponential")
	require.Equal(t, ExitBudget, r.code, r.stderr)
	for _, want := range []string{"nothing was run or spent", "exponential (clip quantile (clip=auto))", "Gaussian-DP filter", "numeric clip"} {
		assert.Contains(t, r.stderr, want)
	}
	assert.NotContains(t, r.stderr, "--rho", "no other grant form fits a mechanism refusal")
	assert.Len(t, history(t, home, data), 1, "nothing reserved")
	after := dplr(t, home, "budget", "show", "--data", data, "--json")
	assert.JSONEq(t, before.stdout, after.stdout, "the refusal leaves the budget untouched")

	r = fit("example-mean")
	require.Equal(t, ExitOK, r.code, r.stderr)
}
