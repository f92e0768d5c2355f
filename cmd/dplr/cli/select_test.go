package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFitSelect: `dplr fit --select` is one run and one ledger record,
// whose result names the choice and the candidates; `dplr plan --select`
// lists every candidate's steps, the choice and the final fit, with the
// total; --select and --set select= together are refused.
func TestFitSelect(t *testing.T) {
	plug, home, data := transformPlugins(t), t.TempDir(), genSpiked(t)
	run := func(args ...string) (string, string, int) {
		var so, se bytes.Buffer
		code := Main(append([]string{args[0], "--plugin-dir", plug, "--home", home}, args[1:]...), &so, &se)
		return so.String(), se.String(), code
	}
	req := []string{"pca-analyze-gauss", "--data", data, "--rho", "0.5", "--select", "rank=1,2", "--select", "clip_quantile=0.5,0.9"}
	so, se, code := run(append([]string{"plan"}, req...)...)
	require.Equal(t, ExitOK, code, se)
	for _, want := range []string{"candidate 1/", "candidate 4/", "select: exponential mechanism over 4 candidates", "final/", "total: at most the grant, ρ=0.5"} {
		assert.Contains(t, so, want)
	}
	assert.Empty(t, history(t, home, data), "plan reserves nothing")
	so, se, code = run(append([]string{"fit", "--out", filepath.Join(t.TempDir(), "o"), "--json", "--quiet"}, req...)...)
	require.Equal(t, ExitOK, code, se)
	var rep FitReport
	require.NoError(t, json.Unmarshal([]byte(so), &rep))
	sc := map[string]float64{}
	for _, s := range rep.Outputs.Scalars {
		sc[s.Name] = s.Value
	}
	assert.Contains(t, []float64{1, 2}, sc["selected_rank"])
	assert.Contains(t, []float64{0.5, 0.9}, sc["selected_clip_quantile"])
	series := map[string][]float64{}
	for _, s := range rep.Outputs.Series {
		series[s.Name] = s.Values
	}
	assert.Equal(t, []float64{1, 1, 2, 2}, series["candidates_rank"])
	assert.Equal(t, []float64{0.5, 0.9, 0.5, 0.9}, series["candidates_clip_quantile"])
	assert.Len(t, history(t, home, data), 1, "one ledger run")
	_, se, code = run("fit", "pca-analyze-gauss", "--data", data, "--rho", "0.5", "--select", "rank=1,2", "--set", "select=rank=1,2")
	assert.Equal(t, ExitUsage, code, se)
}
