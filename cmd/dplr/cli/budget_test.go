package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/ledger"
	"github.com/dplr/dplr/engine/privacy"
)

const (
	hashA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	hashB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// A ledger file emptied, replaced or deleted is an error (exit 5), never a
// fresh start with no budget.
func TestBudgetDamagedLedgerExits5(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, home string)
	}{
		{"emptied", func(t *testing.T, home string) {
			require.NoError(t, os.Truncate(filepath.Join(home, ledger.FileName), 0))
			os.Remove(filepath.Join(home, ledger.FileName+"-wal"))
		}},
		{"deleted", func(t *testing.T, home string) {
			for _, s := range []string{"", "-wal", "-shm"} {
				os.Remove(filepath.Join(home, ledger.FileName+s))
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			r := dplr(t, home, "budget", "set", "--hash", hashA, "--epsilon", "3")
			require.Equal(t, ExitOK, r.code, r.stderr)
			tc.damage(t, home)
			r = dplr(t, home, "budget", "show", "--hash", hashA)
			assert.Equal(t, ExitData, r.code, r.stdout+r.stderr)
			assert.NotContains(t, r.stdout, "no budget set")
			assert.Contains(t, r.stderr, "damaged or tampered with")
			_, err := os.Stat(filepath.Join(home, ledger.FileName))
			if tc.name == "deleted" {
				assert.True(t, os.IsNotExist(err), "nothing is re-created")
			}
		})
	}
}

// Names, links, outside charges and explicit total changes, end to end.
func TestBudgetLinkChargeChange(t *testing.T) {
	home := t.TempDir()
	r := dplr(t, home, "budget", "set", "--hash", hashA, "--epsilon", "3", "--delta", "1e-5", "--name", "faces")
	require.Equal(t, ExitOK, r.code, r.stderr)
	r = dplr(t, home, "budget", "link", "--hash", hashB, "--to", "faces", "--note", "the same images as .npy")
	require.Equal(t, ExitOK, r.code, r.stderr)
	r = dplr(t, home, "budget", "charge", "--hash", hashB, "--epsilon", "1", "--delta", "1e-6", "--note", "a report made by hand")
	require.Equal(t, ExitOK, r.code, r.stderr)
	r = dplr(t, home, "budget", "charge", "--dataset", "faces", "--epsilon", "1", "--delta", "1e-6")
	require.Equal(t, ExitUsage, r.code, "a note is required")

	r = dplr(t, home, "budget", "set", "--dataset", "faces", "--epsilon", "5", "--delta", "1e-5")
	require.Equal(t, ExitBudget, r.code, "a total changes only with --change")
	assert.Contains(t, r.stderr, "--change")
	r = dplr(t, home, "budget", "set", "--dataset", "faces", "--change", "--epsilon", "0.5", "--delta", "1e-5", "--note", "lower")
	require.Equal(t, ExitBudget, r.code, "never below what is spent")
	r = dplr(t, home, "budget", "set", "--dataset", "faces", "--change", "--epsilon", "5", "--delta", "1e-5", "--note", "approved")
	require.Equal(t, ExitOK, r.code, r.stderr)

	r = dplr(t, home, "budget", "show", "--hash", hashB, "--json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var st map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &st))
	assert.Equal(t, hashA, st["data_hash"], "the linked file resolves to its data set")
	assert.Equal(t, "faces", st["name"])

	r = dplr(t, home, "budget", "history", "--dataset", "faces")
	require.Equal(t, ExitOK, r.code, r.stderr)
	for _, want := range []string{"(outside dplr)", "total set to (ε, δ)-DP, ε = 3", "total changed from (ε, δ)-DP, ε = 3, δ = 1e-05 to (ε, δ)-DP, ε = 5, δ = 1e-05 (approved)", "linked " + hashB, "guarantee", "neighbours"} {
		assert.Contains(t, r.stdout, want)
	}
	r = dplr(t, home, "budget", "history", "--dataset", "faces", "--json", "--changes")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var changes []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &changes))
	require.Len(t, changes, 4)

	r = dplr(t, home, "budget", "verify")
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.True(t, strings.HasPrefix(strings.TrimSpace(r.stdout), "ledger "), r.stdout)
	r = dplr(t, home, "budget", "list")
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "faces")
}

// A plugin or user with file access sets the recorded charges to 0 (in the
// earlier ledger's runs table, and in the chain's records): the next fit is
// not admitted on a budget it would exceed.
func TestBudgetZeroedChargesDoNotFreeBudget(t *testing.T) {
	home := t.TempDir()
	data := genSpiked(t)
	r := dplr(t, home, "budget", "set", "--data", data, "--epsilon", "1", "--delta", "1e-5")
	require.Equal(t, ExitOK, r.code, r.stderr)
	fit := func() run {
		return dplr(t, home, "fit", "example-mean", "--data", data, "--epsilon", "0.4", "--delta", "1e-6", "--quiet", "--out", t.TempDir())
	}
	ok := 0
	for ; ok < 20; ok++ {
		if r = fit(); r.code != ExitOK {
			break
		}
	}
	require.Equal(t, ExitBudget, r.code, r.stderr)
	require.Positive(t, ok)

	db, err := sql.Open("sqlite", filepath.Join(home, ledger.FileName))
	require.NoError(t, err)
	changed := int64(0)
	if res, err := db.Exec(`UPDATE runs SET charge_epsilon = 0, charge_delta = 0, charge_rho = 0`); err == nil {
		n, _ := res.RowsAffected()
		changed += n
	}
	zero := regexp.MustCompile(`"charge":\{[^}]*\}`)
	if rows, err := db.Query(`SELECT seq, body FROM chain`); err == nil { // the chain exists in one ledger version
		type rec struct {
			seq  int64
			body []byte
		}
		var recs []rec
		for rows.Next() {
			var x rec
			require.NoError(t, rows.Scan(&x.seq, &x.body))
			recs = append(recs, x)
		}
		require.NoError(t, rows.Close())
		for _, x := range recs {
			if nb := zero.ReplaceAll(x.body, []byte(`"charge":{}`)); string(nb) != string(x.body) {
				_, err := db.Exec(`UPDATE chain SET body = ? WHERE seq = ?`, nb, x.seq)
				require.NoError(t, err)
				changed++
			}
		}
	}
	require.NoError(t, db.Close())
	require.Positive(t, changed)
	r = fit()
	assert.NotEqual(t, ExitOK, r.code, "a fit beyond the total must not be admitted: %s", r.stderr)
	t.Log(r.stderr)
}

// gdpHome is a home whose data set hashA has the total (ε, δ) =
// (100, 1e-3) under the Gaussian-DP filter, μ = 0.27 spent by one
// Gaussian-only run.
func gdpHome(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	home := t.TempDir()
	r := dplr(t, home, "budget", "set", "--hash", hashA, "--epsilon", "100", "--delta", "1e-3")
	require.Equal(t, ExitOK, r.code, r.stderr)
	led, err := ledger.Open(ctx, home)
	require.NoError(t, err)
	defer led.Close()
	g := privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.27 * 0.27 / 2}
	id, err := led.Reserve(ctx, hashA, ledger.ReserveRequest{Estimator: "e", Grant: g})
	require.NoError(t, err)
	step := privacy.Step{Name: "s", Mechanism: privacy.MechGaussian, Calibration: "zcdp", Sensitivity: 1, Scale: 1 / 0.27, Rho: g.Rho}
	require.NoError(t, led.Settle(ctx, id, ledger.Outcome{Status: ledger.Succeeded, Steps: []privacy.Step{step}, Guarantee: privacy.ZCDP}))
	st, err := led.Show(ctx, hashA)
	require.NoError(t, err)
	require.Equal(t, ledger.RuleGDP, st.Rule)
	return home
}

// The reproduction of a lost budget: under the Gaussian-DP filter,
// `budget charge --rho` (or --epsilon with --delta) used to exit 0 with a
// warning, after which every fit and every larger total was refused. It is
// now refused (exit 3, nothing recorded) with its cost under the rule; the
// spend is recorded with --mu, or with --force after which `budget set
// --change` is the way back.
func TestBudgetChargeCannotDestroyABudget(t *testing.T) {
	home := gdpHome(t)
	for _, cost := range [][]string{{"--rho", "0.01"}, {"--epsilon", "0.5", "--delta", "1e-6"}} {
		r := dplr(t, home, append(append([]string{"budget", "charge", "--hash", hashA}, cost...), "--note", "by hand")...)
		require.Equal(t, ExitBudget, r.code, r.stderr)
		for _, want := range []string{"nothing was recorded", "μ = 11.4", "--mu", "--force"} {
			assert.Contains(t, r.stderr, want)
		}
	}
	r := dplr(t, home, "budget", "show", "--hash", hashA)
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "none (no further run fits)")
	assert.Contains(t, r.stdout, "runs:      1 ")

	r = dplr(t, home, "budget", "charge", "--hash", hashA, "--mu", "0.1", "--note", "a Gaussian release, σ = 10Δ")
	require.Equal(t, ExitOK, r.code, r.stderr)
	r = dplr(t, home, "budget", "show", "--hash", hashA, "--json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var st map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &st))
	assert.InDelta(t, 0.27*0.27+0.01, math.Pow(st["spent"].(map[string]any)["mu"].(float64), 2), 1e-9)

	r = dplr(t, home, "budget", "charge", "--hash", hashA, "--rho", "0.01", "--note", "by hand", "--force")
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stderr, "budget set --change")
	r = dplr(t, home, "budget", "set", "--hash", hashA, "--change", "--epsilon", "100", "--delta", "1e-3", "--note", "count the outside spend")
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "rule:      classic")
	assert.NotContains(t, r.stdout, "none (no further run fits)")
}

// Two budgets found to cover the same people are merged, and a file
// linked by mistake is unlinked; neither lowers what any data set is
// recorded as having spent (issue 26 §2).
func TestBudgetMergeAndUnlink(t *testing.T) {
	home := t.TempDir()
	hashC := strings.Repeat("c", 64)
	spent := func(args ...string) (string, float64) {
		t.Helper()
		r := dplr(t, home, append([]string{"budget", "show", "--json"}, args...)...)
		require.Equal(t, ExitOK, r.code, r.stderr)
		var st struct {
			Hash  string `json:"data_hash"`
			Spent struct {
				Epsilon float64 `json:"epsilon"`
			} `json:"spent"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &st))
		return st.Hash, st.Spent.Epsilon
	}
	for _, args := range [][]string{
		{"set", "--hash", hashA, "--epsilon", "10", "--name", "a"},
		{"charge", "--dataset", "a", "--epsilon", "1", "--note", "report"},
		{"set", "--hash", hashB, "--epsilon", "5", "--name", "b"},
		{"charge", "--dataset", "b", "--epsilon", "0.5", "--note", "report"},
	} {
		r := dplr(t, home, append([]string{"budget"}, args...)...)
		require.Equal(t, ExitOK, r.code, "%v: %s", args, r.stderr)
	}
	r := dplr(t, home, "budget", "merge", "--dataset", "b")
	assert.Equal(t, ExitUsage, r.code, "--into is required")
	r = dplr(t, home, "budget", "merge", "--dataset", "b", "--into", "a", "--note", "same people")
	require.Equal(t, ExitOK, r.code, r.stderr)
	h, eps := spent("--hash", hashB)
	assert.Equal(t, hashA, h, "b's hash counts against a")
	assert.InDelta(t, 1.5, eps, 1e-12)
	r = dplr(t, home, "budget", "unlink", "--hash", hashB)
	assert.Equal(t, ExitUsage, r.code, "a merged data set cannot be unlinked")

	r = dplr(t, home, "budget", "link", "--hash", hashC, "--to", "a")
	require.Equal(t, ExitOK, r.code, r.stderr)
	r = dplr(t, home, "budget", "charge", "--hash", hashC, "--epsilon", "2", "--note", "through the link")
	require.Equal(t, ExitOK, r.code, r.stderr)
	r = dplr(t, home, "budget", "unlink", "--hash", hashC, "--note", "other people")
	require.Equal(t, ExitOK, r.code, r.stderr)
	h, eps = spent("--hash", hashC)
	assert.Equal(t, hashC, h)
	assert.InDelta(t, 3.5, eps, 1e-12, "the unlinked file is charged all a was charged")
	_, eps = spent("--dataset", "a")
	assert.InDelta(t, 3.5, eps, 1e-12, "a keeps its charges")

	r = dplr(t, home, "budget", "history", "--dataset", "a")
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "merged data set "+hashB)
	assert.Contains(t, r.stdout, "unlinked "+hashC)
	r = dplr(t, home, "budget", "verify")
	require.Equal(t, ExitOK, r.code, r.stderr)
}
