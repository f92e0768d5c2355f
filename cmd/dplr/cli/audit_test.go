package cli

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/client"
	"github.com/dplr/dplr/engine/dataio"
)

// dplr audit passes a correctly calibrated estimator and catches one whose
// noise is 5× too small (the leaky-mean test plugin), with nothing written
// to the ledger.
func TestAuditCatchesNoiseTooSmall(t *testing.T) {
	home := t.TempDir()
	args := []string{"--epsilon", "1", "--delta", "1e-5", "--set", "clip=1", "--runs", "150", "--json", "--quiet"}

	r := dplr(t, home, append([]string{"audit", "example-mean"}, args...)...)
	require.Equal(t, ExitOK, r.code, r.stderr)
	var rep client.AuditReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	assert.False(t, rep.Violation, rep.Verdict)
	assert.LessOrEqual(t, rep.Bound.Epsilon, rep.ClaimedEps)
	assert.Equal(t, 150, rep.Runs)
	assert.Positive(t, rep.RunsPerSec)

	r = dplr(t, home, append([]string{"audit", "leaky-mean"}, args...)...)
	assert.Equal(t, ExitAudit, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	assert.True(t, rep.Violation)
	require.NotNil(t, rep.Shift)
	assert.Greater(t, rep.Shift.Low, rep.ClaimedMu, "the shift test sees the 5× sensitivity error")

	r = dplr(t, home, "budget", "list", "--json")
	assert.NotContains(t, r.stdout, "example-mean", "the audit charges nothing")
}

func TestAuditRefusesPrivateDataWithoutConfirmation(t *testing.T) {
	r := dplr(t, t.TempDir(), "audit", "example-mean", "--data", "whatever.npy", "--epsilon", "1", "--delta", "1e-5")
	assert.Equal(t, ExitUsage, r.code)
	assert.Contains(t, r.stderr, "--public")
}

// Uncharged audit fits must not side-step a budget: data the ledger holds a
// budget for is refused even with --public, and so is a near copy of it.
func TestAuditRefusesBudgetedData(t *testing.T) {
	home := t.TempDir()
	x := filepath.Join(genSpiked(t), "X.npy")
	r := dplr(t, home, "budget", "set", "--data", x, "--epsilon", "1", "--delta", "1e-6")
	require.Equal(t, ExitOK, r.code, r.stderr)
	r = dplr(t, home, "audit", "example-mean", "--data", x, "--public", "--epsilon", "1", "--delta", "1e-5", "--runs", "60", "--quiet")
	assert.Equal(t, ExitBudget, r.code, r.stderr)
	assert.Contains(t, r.stderr, "has a privacy budget")

	ds, err := dataio.Load(x, dataio.LoadOptions{})
	require.NoError(t, err)
	n, p := ds.X.Dims()
	half := filepath.Join(t.TempDir(), "half.npy")
	require.NoError(t, dataio.SaveNPY(half, ds.X.Slice(0, n/2, 0, p)))
	r = dplr(t, home, "audit", "example-mean", "--data", half, "--public", "--epsilon", "1", "--delta", "1e-5", "--runs", "60", "--quiet")
	assert.Equal(t, ExitBudget, r.code, r.stderr)
	assert.Contains(t, r.stderr, "overlaps a budgeted data set")
}
