package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/dataio"
)

// TestTransformFedRep predicts for one user from a fit directory laid out
// as `dplr fit` writes it.
func TestTransformFedRep(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(dir, "U.npy"), []int{3, 2}, []float64{1, 0, 0, 1, 0, 0}))
	require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(dir, "V.npy"), []int{2, 2}, []float64{2, -1, 0.5, 0.5}))
	require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(dir, "V_user_ids.npy"), []int{2, 1}, []float64{17, 4}))
	rep := `{"estimator": "fedrep-private", "outputs": {"matrices": [{"name": "U", "file": "U.npy"}, {"name": "V", "file": "V.npy"}, {"name": "V_user_ids", "file": "V_user_ids.npy"}]}}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "result.json"), []byte(rep), 0o644))
	rows := filepath.Join(dir, "rows.csv")
	require.NoError(t, os.WriteFile(rows, []byte("1,1,9\n-1,-2,9\n"), 0o644))
	var out bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &bytes.Buffer{}}
	require.NoError(t, runTransformFedRep(context.Background(), env, []string{"--model", dir, "--user", "4", "--data", rows}))
	assert.Equal(t, "1\n-1.5\n", out.String())
	out.Reset()
	require.NoError(t, runTransformFedRep(context.Background(), env, []string{"--model", dir, "--user", "17", "--rows", rows, "--labels", "yes"}))
	assert.Equal(t, "1\n-1\n", out.String()) // a score of 0 reads as −1
	err := runTransformFedRep(context.Background(), env, []string{"--model", dir, "--user", "5", "--rows", rows})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no head")
	// Written as a file.
	outPath := filepath.Join(dir, "pred.csv")
	out.Reset()
	require.NoError(t, runTransformFedRep(context.Background(), env, []string{"--model=" + dir, "--user", "4", "--data", rows, "--out", outPath}))
	b, err := os.ReadFile(outPath)
	require.NoError(t, err)
	assert.Contains(t, string(b), "-1.5")
	// The dispatch test cmdTransform uses.
	assert.True(t, fedrepTransformRequested([]string{"--data", rows, "--model", dir}))
	assert.True(t, fedrepTransformRequested([]string{"--model=" + dir}))
	assert.False(t, fedrepTransformRequested([]string{"--model", t.TempDir()}))
}
