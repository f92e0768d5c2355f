package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/dataio"
)

var (
	transformOnce sync.Once
	transformDir  string
	transformErr  error
)

// transformPlugins builds, once, the plugins whose transforms these tests
// run (pca, fedrep) and returns their directory.
func transformPlugins(t *testing.T) string {
	t.Helper()
	transformOnce.Do(func() {
		if transformDir, transformErr = os.MkdirTemp("", "dplr-transform-test"); transformErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", transformDir+"/", "../../../plugins/pca/cmd/dplr-pca", "../../../plugins/fedrep/cmd/dplr-fedrep").CombinedOutput()
		if err != nil {
			transformErr = fmt.Errorf("%w: %s", err, out)
		}
	})
	require.NoError(t, transformErr)
	return transformDir
}

// writeModel writes a minimal fit output directory: result.json naming U
// (file) and mean (inline), as dplr fit does.
func writeModel(t *testing.T, dir, estimator string, withMean bool) {
	t.Helper()
	require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(dir, "U.npy"), []int{3, 1}, []float64{1, 0, 0}))
	rep := FitReport{Estimator: estimator, Params: map[string]any{"center": "none"}}
	rep.Outputs.Matrices = []MatrixReport{{Name: "U", Rows: 3, Cols: 1, Release: "public", File: "U.npy"}}
	if withMean {
		rep.Params["center"] = "private"
		rep.Outputs.Matrices = append(rep.Outputs.Matrices, MatrixReport{Name: "mean", Rows: 1, Cols: 3, Release: "public", Value: [][]float64{{1, 2, 3}}})
	}
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "result.json"), b, 0o644))
}

// transform projects rows on U after subtracting the released mean, in the
// pca plugin, needs no budget or ledger, and refuses a model without a
// transform or data of the wrong width.
func TestTransform(t *testing.T) {
	plug := transformPlugins(t)
	dir := t.TempDir()
	t.Setenv("DPLR_HOME", filepath.Join(dir, "home"))
	model := filepath.Join(dir, "run")
	require.NoError(t, os.MkdirAll(model, 0o755))
	writeModel(t, model, "pca-analyze-gauss", true)
	in := filepath.Join(dir, "x.csv")
	require.NoError(t, os.WriteFile(in, []byte("4,0,0\n1,5,5\n"), 0o644))
	out := filepath.Join(dir, "y.csv")
	var so, se bytes.Buffer
	code := Main([]string{"transform", "--plugin-dir", plug, "--model", model, "--data", in, "--out", out}, &so, &se)
	require.Equal(t, ExitOK, code, se.String())
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "3\n0\n", string(got))
	assert.Contains(t, so.String(), "no budget spent")
	_, err = os.Stat(filepath.Join(dir, "home", "ledger"))
	assert.True(t, os.IsNotExist(err), "nothing recorded")

	outNpy := filepath.Join(dir, "y.npy")
	require.Equal(t, ExitOK, Main([]string{"transform", "--plugin-dir", plug, "--model", model, "--data", in, "--out", outNpy}, &so, &se), se.String())
	ds, err := dataio.Load(outNpy, dataio.LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, []float64{3, 0}, []float64{ds.X.At(0, 0), ds.X.At(1, 0)})

	other := filepath.Join(dir, "other")
	require.NoError(t, os.MkdirAll(other, 0o755))
	writeModel(t, other, "rgrad-dp", false)
	assert.Equal(t, ExitUsage, Main([]string{"transform", "--plugin-dir", plug, "--model", other, "--data", in, "--out", out}, &so, &se))

	wide := filepath.Join(dir, "w.csv")
	require.NoError(t, os.WriteFile(wide, []byte("1,2\n3,4\n"), 0o644))
	assert.Equal(t, ExitData, Main([]string{"transform", "--plugin-dir", plug, "--model", model, "--data", wide, "--out", out}, &so, &se))
	assert.Equal(t, ExitUsage, Main([]string{"transform", "--plugin-dir", plug, "--model", model, "--data", in, "--out", filepath.Join(dir, "y.txt")}, &so, &se))
}
