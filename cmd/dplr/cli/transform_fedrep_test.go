package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/dataio"
)

// TestTransformFedRep predicts for one user, in the fedrep plugin, from a
// fit directory laid out as `dplr fit` writes it.
func TestTransformFedRep(t *testing.T) {
	plug := transformPlugins(t)
	dir := t.TempDir()
	t.Setenv("DPLR_HOME", filepath.Join(dir, "home"))
	require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(dir, "U.npy"), []int{3, 2}, []float64{1, 0, 0, 1, 0, 0}))
	require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(dir, "V.npy"), []int{2, 2}, []float64{2, -1, 0.5, 0.5}))
	require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(dir, "V_user_ids.npy"), []int{2, 1}, []float64{17, 4}))
	rep := `{"estimator": "fedrep-private", "outputs": {"matrices": [{"name": "U", "file": "U.npy"}, {"name": "V", "release": "per-user", "file": "V.npy"}, {"name": "V_user_ids", "file": "V_user_ids.npy"}]}}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "result.json"), []byte(rep), 0o644))
	rows := filepath.Join(dir, "rows.csv")
	require.NoError(t, os.WriteFile(rows, []byte("1,1,9\n-1,-2,9\n"), 0o644))
	run := func(args ...string) (string, string, int) {
		var so, se bytes.Buffer
		code := Main(append([]string{"transform", "--plugin-dir", plug}, args...), &so, &se)
		return so.String(), se.String(), code
	}
	so, se, code := run("--model", dir, "--user", "4", "--data", rows)
	require.Equal(t, ExitOK, code, se)
	assert.Equal(t, "1\n-1.5\n", so)
	so, se, code = run("--model", dir, "--user", "17", "--rows", rows, "--labels", "yes")
	require.Equal(t, ExitOK, code, se)
	assert.Equal(t, "1\n-1\n", so) // a score of 0 reads as −1
	_, se, code = run("--model", dir, "--user", "5", "--rows", rows)
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, se, "no head")
	_, _, code = run("--model", dir, "--rows", rows)
	assert.Equal(t, ExitUsage, code, "a personalization model needs its user")
	// Written as a file.
	outPath := filepath.Join(dir, "pred.csv")
	so, se, code = run("--model="+dir, "--user", "4", "--data", rows, "--out", outPath)
	require.Equal(t, ExitOK, code, se)
	assert.Contains(t, so, "no budget spent")
	b, err := os.ReadFile(outPath)
	require.NoError(t, err)
	assert.Equal(t, "1\n-1.5\n", string(b))
	_, err = os.Stat(filepath.Join(dir, "home", "ledger"))
	assert.True(t, os.IsNotExist(err), "nothing recorded")
}
