package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/dataio"
)

// With a released feature_scale (feature_scale=private), transform divides
// each column by its scale before subtracting the mean and projecting:
// ((4, 0, 0)/(2, 1, 1) − (1, 2, 3))·e₁ = 1.
func TestTransformFeatureScale(t *testing.T) {
	plug := transformPlugins(t)
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
	require.Equal(t, ExitOK, Main([]string{"transform", "--plugin-dir", plug, "--model", model, "--data", in, "--out", out}, &so, &se), se.String())
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "1\n4\n", string(got))
}

// A fit with --column-scales records them in result.json, and transform
// applies them to new rows without the flag: ((4, 0, 0)/(2, 1, 1) − (1, 2,
// 3))·e₁ = 1 again, the scales coming from the model's data section.
// Giving other scales to transform is refused.
func TestTransformColumnScales(t *testing.T) {
	plug := transformPlugins(t)
	dir := t.TempDir()
	t.Setenv("DPLR_HOME", filepath.Join(dir, "home"))
	model := filepath.Join(dir, "run")
	require.NoError(t, os.MkdirAll(model, 0o755))
	rep := FitReport{Estimator: "pca-analyze-gauss", Params: map[string]any{"center": "private"}}
	rep.Data.ColumnScales = []float64{2, 1, 1}
	rep.Outputs.Matrices = []MatrixReport{
		{Name: "U", Rows: 3, Cols: 1, Release: "public", Value: [][]float64{{1}, {0}, {0}}},
		{Name: "mean", Rows: 1, Cols: 3, Release: "public", Value: [][]float64{{1, 2, 3}}},
	}
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(model, "result.json"), b, 0o644))
	in := filepath.Join(dir, "x.csv")
	require.NoError(t, os.WriteFile(in, []byte("4,0,0\n10,5,5\n"), 0o644))
	out := filepath.Join(dir, "y.csv")
	var so, se bytes.Buffer
	require.Equal(t, ExitOK, Main([]string{"transform", "--plugin-dir", plug, "--model", model, "--data", in, "--out", out}, &so, &se), se.String())
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "1\n4\n", string(got))

	other := filepath.Join(dir, "s.csv")
	require.NoError(t, os.WriteFile(other, []byte("1,1,1\n"), 0o644))
	se.Reset()
	assert.Equal(t, ExitUsage, Main([]string{"transform", "--plugin-dir", plug, "--model", model, "--data", in, "--column-scales", other, "--out", out}, &so, &se))
	assert.Contains(t, se.String(), "differ from the scales the model was fitted with")
}

// dplr fit --column-scales divides each column before the estimator sees
// it (the example plugin's non-private mean of a table whose second column
// is in units 1000× the first is the mean of the rescaled table), records
// the scales in result.json and keeps the raw table's budget key.
func TestFitColumnScales(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	var rows bytes.Buffer
	for i := 0; i < 50; i++ {
		fmt.Fprintf(&rows, "%d,%d\n", i, 1000*(i%5))
	}
	raw := filepath.Join(dir, "raw.csv")
	require.NoError(t, os.WriteFile(raw, rows.Bytes(), 0o644))
	scales := filepath.Join(dir, "scales.csv")
	require.NoError(t, os.WriteFile(scales, []byte("1,1000\n"), 0o644))
	fit := func(out string, args ...string) FitReport {
		r := dplr(t, home, append([]string{"fit", "example-mean-nonprivate", "--non-private", "--data", raw, "--out", out, "--json", "--quiet"}, args...)...)
		require.Equal(t, ExitOK, r.code, r.stderr)
		var rep FitReport
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
		return rep
	}
	a := fit(filepath.Join(dir, "a"), "--column-scales", scales)
	b := fit(filepath.Join(dir, "b"))
	assert.Equal(t, []float64{1, 1000}, a.Data.ColumnScales)
	assert.Empty(t, b.Data.ColumnScales)
	assert.Equal(t, b.Data.Source, a.Data.Source, "the budget's key is the raw table's")
	assert.NotEqual(t, b.Data.Hash, a.Data.Hash)
	mean := func(rep FitReport) []float64 {
		for _, m := range rep.Outputs.Matrices {
			if m.Name == "mean" {
				if m.File == "" {
					return m.Value[0]
				}
				ds, err := dataio.Load(filepath.Join(rep.OutDir, m.File), dataio.LoadOptions{})
				require.NoError(t, err)
				return ds.X.RawRowView(0)
			}
		}
		t.Fatal("no mean released")
		return nil
	}
	ma, mb := mean(a), mean(b)
	assert.InDelta(t, mb[0], ma[0], 1e-12)
	assert.InDelta(t, mb[1]/1000, ma[1], 1e-12)
	assert.InDelta(t, 2.0, ma[1], 1e-12)
}

// A non-private reference fit's outputs are all evaluation-only; transform
// uses them for that model (its user opted in with --non-private), never
// the evaluation outputs of a private run.
func TestTransformNonPrivateReference(t *testing.T) {
	plug := transformPlugins(t)
	for _, tc := range []struct {
		guarantee string
		code      int
	}{{"none", ExitOK}, {"approx", ExitData}} {
		t.Run(tc.guarantee, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("DPLR_HOME", filepath.Join(dir, "home"))
			model := filepath.Join(dir, "run")
			require.NoError(t, os.MkdirAll(model, 0o755))
			rep := FitReport{Estimator: "pca-nonprivate"}
			rep.Privacy.Guarantee = tc.guarantee
			rep.Outputs.Matrices = []MatrixReport{{Name: "U", Rows: 2, Cols: 1, Release: "evaluation", Value: [][]float64{{0}, {1}}}}
			b, err := json.Marshal(rep)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(model, "result.json"), b, 0o644))
			in := filepath.Join(dir, "x.csv")
			require.NoError(t, os.WriteFile(in, []byte("4,7\n"), 0o644))
			out := filepath.Join(dir, "y.csv")
			var so, se bytes.Buffer
			require.Equal(t, tc.code, Main([]string{"transform", "--plugin-dir", plug, "--model", model, "--data", in, "--out", out}, &so, &se), se.String())
			if tc.code == ExitOK {
				got, err := os.ReadFile(out)
				require.NoError(t, err)
				assert.Equal(t, "7\n", string(got))
			} else {
				assert.Contains(t, se.String(), "no components")
			}
		})
	}
}

// transform never overwrites its model or its input, and refuses model
// files that are not regular files (a FIFO used to hang it).
func TestTransformProtectsModelAndInputs(t *testing.T) {
	plug := transformPlugins(t)
	dir := t.TempDir()
	t.Setenv("DPLR_HOME", filepath.Join(dir, "home"))
	model := filepath.Join(dir, "run")
	require.NoError(t, os.MkdirAll(model, 0o755))
	require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(model, "U.npy"), []int{2, 1}, []float64{0, 1}))
	rep := FitReport{Estimator: "pca-analyze-gauss"}
	rep.Outputs.Matrices = []MatrixReport{{Name: "U", Rows: 2, Cols: 1, Release: "public", File: "U.npy"}}
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(model, "result.json"), b, 0o644))
	in := filepath.Join(dir, "x.csv")
	require.NoError(t, os.WriteFile(in, []byte("4,7\n"), 0o644))
	before, err := os.ReadFile(filepath.Join(model, "U.npy"))
	require.NoError(t, err)
	for _, tc := range []struct{ name, out, want string }{
		{"the model's U", filepath.Join(model, "U.npy"), "is a file of the model"},
		{"its result.json", filepath.Join(model, "result.json"), "give a .npy or .csv file"},
		{"the model through ..", filepath.Join(model, "..", "run", "U.npy"), "is a file of the model"},
		{"the model directory", model, "give a .npy or .csv file"},
		{"the input", in, "is the input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var so, se bytes.Buffer
			assert.Equal(t, ExitUsage, Main([]string{"transform", "--plugin-dir", plug, "--model", model, "--data", in, "--out", tc.out}, &so, &se))
			assert.Contains(t, se.String(), tc.want)
		})
	}
	after, err := os.ReadFile(filepath.Join(model, "U.npy"))
	require.NoError(t, err)
	assert.Equal(t, before, after, "the model is intact")
	got, err := os.ReadFile(in)
	require.NoError(t, err)
	assert.Equal(t, "4,7\n", string(got), "the input is intact")

	// a FIFO in place of U.npy is refused, not opened
	require.NoError(t, os.Remove(filepath.Join(model, "U.npy")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(model, "U.npy"), 0o644))
	var so, se bytes.Buffer
	assert.Equal(t, ExitData, Main([]string{"transform", "--plugin-dir", plug, "--model", model, "--data", in, "--out", filepath.Join(dir, "y.csv")}, &so, &se))
	assert.Contains(t, se.String(), "not a regular file")
}

// Every fit of a data set without a budget total says on stderr what its
// runs have spent so far, summed (a grid search used to spend silently).
func TestFitWarnsWithoutTotal(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	var rows bytes.Buffer
	for i := 0; i < 50; i++ {
		fmt.Fprintf(&rows, "%d,%d\n", i%7, i%5)
	}
	raw := filepath.Join(dir, "raw.csv")
	require.NoError(t, os.WriteFile(raw, rows.Bytes(), 0o644))
	for i, want := range []string{"spent ε = 0.5", "spent ε = 1"} {
		r := dplr(t, home, "fit", "example-mean", "--epsilon", "0.5", "--delta", "1e-6", "--data", raw, "--set", "clip=10", "--out", filepath.Join(dir, fmt.Sprint(i)), "--quiet")
		require.Equal(t, ExitOK, r.code, r.stderr)
		assert.Contains(t, r.stderr, "dplr: warning: this data set has no budget total")
		assert.Contains(t, r.stderr, want)
	}
	r := dplr(t, home, "budget", "set", "--data", raw, "--epsilon", "10", "--delta", "1e-5")
	require.Equal(t, ExitOK, r.code, r.stderr)
	r = dplr(t, home, "fit", "example-mean", "--epsilon", "0.5", "--delta", "1e-6", "--data", raw, "--set", "clip=10", "--out", filepath.Join(dir, "x"), "--quiet")
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "no budget total")
}

// A model's result.json can name only files of its own directory: an
// output file "../x.npy" (a model dir someone else wrote) is refused, so a
// transform never reads a file outside the model.
func TestTransformModelFilesStayInTheModel(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DPLR_HOME", filepath.Join(dir, "home"))
	model := filepath.Join(dir, "run")
	require.NoError(t, os.MkdirAll(model, 0o755))
	require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(dir, "outside.npy"), []int{2, 1}, []float64{0, 1}))
	rep := FitReport{Estimator: "pca-analyze-gauss"}
	rep.Outputs.Matrices = []MatrixReport{{Name: "U", Rows: 2, Cols: 1, Release: "public", File: "../outside.npy"}}
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(model, "result.json"), b, 0o644))
	in := filepath.Join(dir, "x.csv")
	require.NoError(t, os.WriteFile(in, []byte("4,7\n"), 0o644))
	var so, se bytes.Buffer
	assert.Equal(t, ExitUsage, Main([]string{"transform", "--model", model, "--data", in, "--out", filepath.Join(dir, "y.csv")}, &so, &se))
	assert.Contains(t, se.String(), "not a file of the model directory")
}
