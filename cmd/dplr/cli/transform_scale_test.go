package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/dataio"
)

// With a released feature_scale (feature_scale=private), transform divides
// each column by its scale before subtracting the mean and projecting:
// ((4, 0, 0)/(2, 1, 1) − (1, 2, 3))·e₁ = 1.
func TestTransformFeatureScale(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DPLR_HOME", filepath.Join(dir, "home"))
	model := filepath.Join(dir, "run")
	require.NoError(t, os.MkdirAll(model, 0o755))
	require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(model, "U.npy"), []int{3, 1}, []float64{1, 0, 0}))
	rep := FitReport{Estimator: "pca-analyze-gauss", Params: map[string]any{"center": "private", "feature_scale": "private"}}
	rep.Outputs.Matrices = []MatrixReport{
		{Name: "U", Rows: 3, Cols: 1, Release: "public", File: "U.npy"},
		{Name: "mean", Rows: 1, Cols: 3, Release: "public", Value: [][]float64{{1, 2, 3}}},
		{Name: "feature_scale", Rows: 1, Cols: 3, Release: "public", Value: [][]float64{{2, 1, 1}}},
	}
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(model, "result.json"), b, 0o644))
	in := filepath.Join(dir, "x.csv")
	require.NoError(t, os.WriteFile(in, []byte("4,0,0\n10,5,5\n"), 0o644))
	out := filepath.Join(dir, "y.csv")
	var so, se bytes.Buffer
	require.Equal(t, ExitOK, Main([]string{"transform", "--model", model, "--data", in, "--out", out}, &so, &se), se.String())
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "1\n4\n", string(got))
}
