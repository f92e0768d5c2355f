package cli

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/dataio"
)

// The budget belongs to the source records, not to a view of them: with a
// total of ε = 1 spent, the file again, a rescaled view and a reversed
// copy of the same rows are refused, and a copy of half of the rows is
// refused as overlapping; linked, it draws on the spent budget (issue 14
// §1). Format and dtype invariance are tested in engine/dataio.
func TestBudgetFollowsTheSourceRecords(t *testing.T) {
	home := t.TempDir()
	dir := t.TempDir()
	x, err := dataio.Load(filepath.Join(genSpiked(t), "X.npy"), dataio.LoadOptions{})
	require.NoError(t, err)
	n, p := x.X.Dims()
	orig := filepath.Join(dir, "orig.npy")
	require.NoError(t, dataio.SaveNPY(orig, x.X))

	rev := mat.NewDense(n, p, nil)
	for i := 0; i < n; i++ {
		rev.SetRow(i, x.X.RawRowView(n-1-i))
	}
	reversed := filepath.Join(dir, "reversed.npy")
	require.NoError(t, dataio.SaveNPY(reversed, rev))
	half := filepath.Join(dir, "half.npy")
	require.NoError(t, dataio.SaveNPY(half, x.X.Slice(0, n/2, 0, p)))

	fit := func(data string, extra ...string) run {
		args := append([]string{"fit", "example-mean", "--data", data, "--epsilon", "1", "--delta", "1e-6", "--set", "clip=3", "--out", t.TempDir(), "--quiet"}, extra...)
		return dplr(t, home, args...)
	}
	r := dplr(t, home, "budget", "set", "--data", orig, "--epsilon", "1", "--delta", "1e-6")
	require.Equal(t, ExitOK, r.code, r.stderr)
	r = fit(orig)
	require.Equal(t, ExitOK, r.code, r.stderr)

	for _, tc := range []struct {
		name string
		data string
		args []string
	}{
		{"the same file again", orig, nil},
		{"a rescaled view", orig, []string{"--scale", "1.0000001"}},
		{"the rows reversed", reversed, nil},
	} {
		r = fit(tc.data, tc.args...)
		assert.Equal(t, ExitBudget, r.code, "%s: %s", tc.name, r.stderr)
	}

	r = fit(half)
	assert.Equal(t, ExitBudget, r.code, r.stderr)
	assert.Contains(t, r.stderr, "shares about 100% of its rows")
	st := dplr(t, home, "budget", "show", "--data", orig, "--json")
	require.Equal(t, ExitOK, st.code, st.stderr)
	var status struct {
		Hash string `json:"data_hash"`
	}
	require.NoError(t, json.Unmarshal([]byte(st.stdout), &status))
	r = dplr(t, home, "budget", "link", "--data", half, "--to", status.Hash)
	require.Equal(t, ExitOK, r.code, r.stderr)
	r = fit(half)
	assert.Equal(t, ExitBudget, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "shares about", "linked: refused by the spent budget itself")
}
