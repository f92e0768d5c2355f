package cli

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/dataio"
)

// A result's warnings head the summary and reach stderr as "dplr: warning:"
// lines even with --quiet, and the JSON report lists them apart from the
// notes: here a table whose first column's variance dwarfs the others' (a
// column in other units), so the released first component is that column.
func TestFitWarningsHeadTheSummaryAndReachStderr(t *testing.T) {
	plug := transformPlugins(t)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(5, 6))
	const n, p = 4000, 6
	x := make([]float64, n*p)
	for i := range x {
		x[i] = r.NormFloat64()
		if i%p == 0 {
			x[i] *= 1000
		}
	}
	data := filepath.Join(dir, "x.npy")
	require.NoError(t, dataio.SaveNPYFloat64(data, []int{n, p}, x))
	args := []string{"fit", "pca-analyze-gauss", "--plugin-dir", plug, "--home", filepath.Join(dir, "home"), "--data", data,
		"--epsilon", "4", "--delta", "1e-6", "--set", "rank=2"}
	const want = "component 1 is column 1 alone"

	var so, se bytes.Buffer
	require.Equal(t, ExitOK, Main(append(args, "--out", filepath.Join(dir, "a")), &so, &se), se.String())
	lines := strings.Split(so.String(), "\n")
	require.Greater(t, len(lines), 2)
	assert.True(t, strings.HasPrefix(lines[1], "warning: "+want), "the warning comes right after the header line:\n%s", so.String())
	assert.Contains(t, se.String(), "dplr: warning: "+want)

	so.Reset()
	se.Reset()
	require.Equal(t, ExitOK, Main(append(args, "--out", filepath.Join(dir, "b"), "--quiet"), &so, &se), se.String())
	assert.Contains(t, se.String(), "dplr: warning: "+want, "on stderr with --quiet too")

	so.Reset()
	se.Reset()
	require.Equal(t, ExitOK, Main(append(args, "--out", filepath.Join(dir, "c"), "--json"), &so, &se), se.String())
	var rep FitReport
	require.NoError(t, json.Unmarshal(so.Bytes(), &rep))
	require.NotEmpty(t, rep.Warnings)
	assert.Contains(t, rep.Warnings[0], want)
	for _, note := range rep.Notes {
		assert.NotContains(t, note, want, "a warning is not repeated among the notes")
	}
}
