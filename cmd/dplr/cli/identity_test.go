package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/dataio"
)

// The budget belongs to the source records, not to a view of them: with a
// total of ε = 1 spent, the file again, a rescaled view and a reversed
// copy of the same rows are refused, and a copy of half of the rows is
// counted against the same spent budget, linked or not (issue 14 §1,
// issue 26 §7). Format and dtype invariance are tested in engine/dataio.
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
	assert.Contains(t, r.stderr, "counted against the budgeted data set", "its rows are rows of the spent data set")
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

// `budget set` on a copy of a budgeted data set's first rows is refused
// before anything is written, naming the data set it overlaps, so the
// original keeps what is left of its budget (issue 26 §2: a total of
// ε = 10 with 1 spent, then a total set on the first 200 rows, locked the
// remaining 9).
func TestBudgetSetOnOverlappingDataIsRefused(t *testing.T) {
	home := t.TempDir()
	dir := t.TempDir()
	x, err := dataio.Load(filepath.Join(genSpiked(t), "X.npy"), dataio.LoadOptions{})
	require.NoError(t, err)
	_, p := x.X.Dims()
	a := filepath.Join(dir, "a.npy")
	require.NoError(t, dataio.SaveNPY(a, x.X))
	head := filepath.Join(dir, "head.npy")
	require.NoError(t, dataio.SaveNPY(head, x.X.Slice(0, 200, 0, p)))

	r := dplr(t, home, "budget", "set", "--data", a, "--epsilon", "10", "--delta", "1e-5", "--name", "a")
	require.Equal(t, ExitOK, r.code, r.stderr)
	r = dplr(t, home, "budget", "charge", "--dataset", "a", "--epsilon", "1", "--delta", "1e-6", "--note", "earlier release")
	require.Equal(t, ExitOK, r.code, r.stderr)

	r = dplr(t, home, "budget", "set", "--data", head, "--epsilon", "5", "--delta", "1e-5")
	assert.Equal(t, ExitBudget, r.code, r.stderr)
	assert.Contains(t, r.stderr, "budgeted data set a")
	assert.Contains(t, r.stderr, "budget link")
	r = dplr(t, home, "budget", "list", "--json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var sets []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sets))
	assert.Len(t, sets, 1, "nothing was written for the refused data set")

	r = dplr(t, home, "fit", "example-mean", "--data", a, "--epsilon", "8.99", "--delta", "8e-6", "--set", "clip=3", "--out", t.TempDir(), "--quiet")
	assert.Equal(t, ExitOK, r.code, "ε = 9 remains usable on a: %s", r.stderr)
}

// A fit on the first 70% of a budgeted file's rows (a cross-validation
// fold) is charged to that file's budget, with a note; the original's
// history shows the run and the rows it read; the fold has no budget of
// its own and a total set on it is refused; a fold run that does not fit
// is refused naming the budgeted data set, with nothing spent or linked
// (issue 26 §7).
func TestFitOnAFoldIsChargedToItsDataSet(t *testing.T) {
	home := t.TempDir()
	dir := t.TempDir()
	x, err := dataio.Load(filepath.Join(genSpiked(t), "X.npy"), dataio.LoadOptions{})
	require.NoError(t, err)
	n, p := x.X.Dims()
	orig := filepath.Join(dir, "orig.npy")
	require.NoError(t, dataio.SaveNPY(orig, x.X))
	fold := filepath.Join(dir, "fold.npy")
	require.NoError(t, dataio.SaveNPY(fold, x.X.Slice(0, 7*n/10, 0, p)))
	show := func(data string) map[string]any {
		r := dplr(t, home, "budget", "show", "--data", data, "--json")
		require.Equal(t, ExitOK, r.code, r.stderr)
		var st map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &st))
		return st
	}

	r := dplr(t, home, "budget", "set", "--data", orig, "--epsilon", "3", "--delta", "1e-5", "--name", "orig")
	require.Equal(t, ExitOK, r.code, r.stderr)
	r = dplr(t, home, "fit", "example-mean", "--data", fold, "--epsilon", "1", "--delta", "1e-6", "--set", "clip=3", "--json", "--quiet")
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stderr, "dplr: warning: counted against the budgeted data set orig")
	var rep FitReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	assert.Contains(t, strings.Join(rep.Notes, "\n"), "counted against the budgeted data set orig")

	st := show(orig)
	assert.Equal(t, []any{rep.Data.Source}, st["aliases"], "the fold is linked to orig")
	runs := history(t, home, orig)
	require.Len(t, runs, 1)
	assert.Equal(t, rep.Data.Source, runs[0]["data"], "the history names the rows the run read")
	assert.Equal(t, "succeeded", runs[0]["state"])
	assert.Equal(t, st["data_hash"], show(fold)["data_hash"], "the fold has no budget of its own")
	r = dplr(t, home, "budget", "show", "--data", orig)
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "via links: 1 of the runs read a file linked to it")

	r = dplr(t, home, "budget", "set", "--data", fold, "--epsilon", "5", "--delta", "1e-5")
	assert.Equal(t, ExitBudget, r.code, r.stderr)
	assert.Contains(t, r.stderr, "linked to the data set orig")
	spent := show(orig)["spent"]
	r = dplr(t, home, "fit", "example-mean", "--data", fold, "--epsilon", "3", "--delta", "1e-5", "--set", "clip=3", "--quiet")
	assert.Equal(t, ExitBudget, r.code, r.stderr)
	assert.Contains(t, r.stderr, "orig")
	assert.NotContains(t, r.stderr, dir, "no file path in the refusal")
	assert.Equal(t, spent, show(orig)["spent"], "nothing spent")
	assert.Len(t, history(t, home, orig), 1)
}
