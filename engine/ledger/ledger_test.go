package ledger

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/privacy"
)

func hashOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func openT(t *testing.T, dir string) *Ledger {
	t.Helper()
	l, err := Open(context.Background(), dir)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

func pureStep(eps float64) privacy.Step {
	return privacy.Step{Name: "s", Mechanism: privacy.MechLaplace, Calibration: "pure", Epsilon: eps, Rho: eps * eps / 2}
}

func reserve(t *testing.T, l *Ledger, h string, g privacy.Grant) RunID {
	t.Helper()
	id, err := l.Reserve(context.Background(), h, ReserveRequest{Estimator: "test", Grant: g})
	require.NoError(t, err)
	return id
}

func TestHomeDir(t *testing.T) {
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	tests := []struct {
		name, dplr, xdg, want string
	}{
		{"DPLR_HOME wins", "/srv/dplr", "/x/data", "/srv/dplr"},
		{"XDG data home", "", "/x/data", "/x/data/dplr"},
		{"relative XDG ignored", "", "rel/data", filepath.Join(home, ".local", "share", "dplr")},
		{"default", "", "", filepath.Join(home, ".local", "share", "dplr")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvHome, tc.dplr)
			t.Setenv("XDG_DATA_HOME", tc.xdg)
			got, err := HomeDir()
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestOpenCreatesPrivateFileAndMigratesOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a?b#c%d") // characters SQLite URIs treat specially
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		l, err := Open(ctx, dir)
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(dir, FileName), l.Path())
		var n, v int
		require.NoError(t, l.db.QueryRowContext(ctx, "SELECT count(*), max(version) FROM schema_migrations").Scan(&n, &v))
		assert.Equal(t, SchemaVersion, n)
		assert.Equal(t, SchemaVersion, v)
		var mode string
		require.NoError(t, l.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode))
		assert.Equal(t, "wal", mode)
		require.NoError(t, l.Close())
	}
	fi, err := os.Stat(filepath.Join(dir, FileName))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

func TestLifecyclePureBudget(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("lifecycle")
	require.NoError(t, l.SetBudget(ctx, strings.ToUpper(h), "iris", pureG(1)))

	// A success is charged what it achieved (0.25 of its 0.5 grant).
	id1 := reserve(t, l, h, pureG(0.5))
	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	assert.InDelta(t, 0.5, st.Spent.Epsilon, 1e-12, "a reserved run is charged its full grant")
	assert.Equal(t, 1, st.Runs.Reserved)
	require.NoError(t, l.Settle(ctx, id1, Outcome{Status: Succeeded, Steps: []privacy.Step{pureStep(0.125), pureStep(0.125)}}))

	st, err = l.Show(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, "iris", st.Name)
	assert.True(t, st.HasBudget)
	assert.Equal(t, "pure", st.Spent.Composition)
	assert.InDelta(t, 0.25, st.Spent.Epsilon, 1e-12)
	assert.InDelta(t, 0.75, st.Remaining.Epsilon, 1e-12)
	assert.Equal(t, RunCounts{Total: 1, Succeeded: 1}, st.Runs)

	// Exactly the remaining 0.75 fits; then nothing more.
	id2 := reserve(t, l, h, pureG(0.75))
	_, err = l.Reserve(ctx, h, ReserveRequest{Estimator: "test", Grant: pureG(0.01)})
	require.ErrorIs(t, err, ErrBudgetExceeded)
	assert.Contains(t, err.Error(), "does not fit")
	require.NoError(t, l.Settle(ctx, id2, Outcome{Status: Succeeded, Achieved: &privacy.Achieved{Epsilon: 0.75, Composition: "pure"}}))

	runs, err := l.History(ctx, h)
	require.NoError(t, err)
	require.Len(t, runs, 2, "a refused reservation leaves no record")
	assert.Equal(t, []RunID{id1, id2}, []RunID{runs[0].ID, runs[1].ID})
	assert.Equal(t, Succeeded, runs[0].State)
	assert.Equal(t, "pure", runs[0].Basis)
	assert.InDelta(t, 0.25, runs[0].Charge.Epsilon, 1e-12)
	// A pure run carries the ρ statement (Σε)²/2.
	assert.InDelta(t, 0.25*0.25/2, runs[0].Charge.Rho, 1e-15)
	assert.False(t, runs[0].SettledAt.IsZero())
	assert.Equal(t, os.Getpid(), runs[0].PID)
}

func TestRefundsAndFailures(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("failures")
	require.NoError(t, l.SetBudget(ctx, h, "", approxG(1, 1e-6)))

	// Failed before noise: refunded, shown failed.
	id := reserve(t, l, h, approxG(0.5, 5e-7))
	require.NoError(t, l.Settle(ctx, id, Outcome{Status: Failed, Error: "rank too large"}))
	r, err := l.Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, Failed, r.State)
	assert.True(t, r.Refunded)
	assert.True(t, r.Charge.IsZero())
	assert.Equal(t, "rank too large", r.Error)

	// Failed after noise: full grant, even if its steps spent less.
	id = reserve(t, l, h, approxG(0.5, 5e-7))
	require.NoError(t, l.Settle(ctx, id, Outcome{Status: Failed, NoiseDrawn: true, Steps: []privacy.Step{pureStep(0.01)}, Error: "backend crashed"}))
	r, err = l.Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, Failed, r.State)
	assert.False(t, r.Refunded)
	assert.Equal(t, Charge{Epsilon: 0.5, Delta: 5e-7}, r.Charge)
	assert.Equal(t, "grant", r.Basis)

	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, RunCounts{Total: 2, Failed: 2, Refunded: 1}, st.Runs)
	assert.InDelta(t, 0.5, st.Spent.Epsilon, 1e-12)
	assert.InDelta(t, 5e-7, st.Spent.Delta, 1e-18)
	assert.InDelta(t, 0.5, st.Remaining.Epsilon, 1e-12)
	// The refunded half is available again.
	reserve(t, l, h, approxG(0.5, 5e-7))
}

func TestSettleErrorsChangeNothing(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("settle")
	require.NoError(t, l.SetBudget(ctx, h, "", pureG(1)))
	id := reserve(t, l, h, pureG(0.5))

	tests := []struct {
		name    string
		id      RunID
		out     Outcome
		wantErr error
	}{
		{"unknown run", id + 100, Outcome{Status: Failed}, ErrNotFound},
		{"bad status", id, Outcome{Status: "done"}, ErrInvalid},
		{"success without cost", id, Outcome{Status: Succeeded}, ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, l.Settle(ctx, tc.id, tc.out), tc.wantErr)
			r, err := l.Get(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, Reserved, r.State)
		})
	}
	require.NoError(t, l.Settle(ctx, id, Outcome{Status: Succeeded, Steps: []privacy.Step{}}))
	err := l.Settle(ctx, id, Outcome{Status: Failed})
	require.ErrorIs(t, err, ErrAlreadySettled)
	r, err := l.Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, Succeeded, r.State, "settling twice leaves the first outcome")
	assert.True(t, r.Charge.IsZero(), "a success with no steps spent nothing")
}

// A success whose reported cost exceeds its grant (a broken accountant) is
// charged the full grant, never more and never silently less.
func TestSuccessBeyondGrantChargesGrant(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("beyond")
	require.NoError(t, l.SetBudget(ctx, h, "", pureG(1)))
	for _, out := range []Outcome{
		{Status: Succeeded, Achieved: &privacy.Achieved{Epsilon: 0.9, Composition: "pure"}},
		{Status: Succeeded, Achieved: &privacy.Achieved{Epsilon: math.NaN()}},
		{Status: Succeeded, Steps: []privacy.Step{pureStep(0.2), pureStep(0.2)}},
	} {
		id := reserve(t, l, h, pureG(0.25))
		require.NoError(t, l.Settle(ctx, id, out))
		r, err := l.Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, privacy.GrantCharge(pureG(0.25)), r.Charge)
		assert.Equal(t, "grant", r.Basis)
		assert.Contains(t, r.Note, "full grant")
	}
}

func TestValidationSpendsNothing(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("validation")
	require.NoError(t, l.SetBudget(ctx, h, "", pureG(1)))
	tests := []struct {
		name    string
		hash    string
		req     ReserveRequest
		wantErr error
	}{
		{"short hash", "abc", ReserveRequest{Estimator: "e", Grant: pureG(0.1)}, ErrInvalid},
		{"non-hex hash", strings.Repeat("z", 64), ReserveRequest{Estimator: "e", Grant: pureG(0.1)}, ErrInvalid},
		{"no estimator", h, ReserveRequest{Grant: pureG(0.1)}, ErrInvalid},
		{"NaN epsilon", h, ReserveRequest{Estimator: "e", Grant: pureG(math.NaN())}, ErrInvalid},
		{"infinite epsilon", h, ReserveRequest{Estimator: "e", Grant: pureG(math.Inf(1))}, ErrInvalid},
		{"negative epsilon", h, ReserveRequest{Estimator: "e", Grant: pureG(-1)}, ErrInvalid},
		{"delta one", h, ReserveRequest{Estimator: "e", Grant: approxG(0.1, 1)}, ErrInvalid},
		{"unknown kind", h, ReserveRequest{Estimator: "e", Grant: privacy.Grant{Kind: "renyi", Epsilon: 1}}, ErrInvalid},
		{"approx grant on pure budget", h, ReserveRequest{Estimator: "e", Grant: approxG(0.1, 1e-9)}, ErrIncompatible},
		{"zcdp grant on pure budget", h, ReserveRequest{Estimator: "e", Grant: zcdpG(0.01)}, ErrIncompatible},
		{"too large", h, ReserveRequest{Estimator: "e", Grant: pureG(1.5)}, ErrBudgetExceeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := l.Reserve(ctx, tc.hash, tc.req)
			require.ErrorIs(t, err, tc.wantErr)
		})
	}
	runs, err := l.History(ctx, h)
	require.NoError(t, err)
	assert.Empty(t, runs)
	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, "none", st.Spent.Composition)
	assert.InDelta(t, 1, st.Remaining.Epsilon, 0)
	ds, err := l.Datasets(ctx)
	require.NoError(t, err)
	assert.Len(t, ds, 1, "invalid hashes register no data set")

	require.ErrorIs(t, l.SetBudget(ctx, h, "", pureG(0)), ErrInvalid)
	require.ErrorIs(t, l.SetBudget(ctx, "nothex", "", pureG(1)), ErrInvalid)
}

func TestNoBudgetThenSetBudget(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("nobudget")

	st, err := l.Show(ctx, h)
	require.NoError(t, err, "an unknown data set is not an error")
	assert.False(t, st.HasBudget)
	assert.Contains(t, st.String(), "no budget set")

	id, err := l.Reserve(ctx, h, ReserveRequest{Estimator: "pca", Grant: approxG(0.5, 1e-7), Name: "mnist", Params: map[string]string{"rank": "5"}})
	require.NoError(t, err, "runs on a data set without a budget are allowed")
	require.NoError(t, l.Settle(ctx, id, Outcome{Status: Succeeded, Achieved: &privacy.Achieved{Epsilon: 0.5, Delta: 1e-7, Composition: "basic"}}))
	reserve(t, l, h, approxG(0.25, 1e-7))

	st, err = l.Show(ctx, h)
	require.NoError(t, err)
	assert.False(t, st.HasBudget)
	assert.Equal(t, "mnist", st.Name)
	assert.Equal(t, "sum", st.Spent.Composition)
	assert.InDelta(t, 0.75, st.Spent.Epsilon, 1e-12)
	assert.Contains(t, st.String(), "no budget set")
	runs, err := l.History(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"rank": "5"}, runs[0].Params)

	// A budget below what was spent, or of an incompatible form, is refused.
	require.ErrorIs(t, l.SetBudget(ctx, h, "", approxG(0.5, 1e-6)), ErrBudgetExceeded)
	require.ErrorIs(t, l.SetBudget(ctx, h, "", pureG(10)), ErrIncompatible)
	st, err = l.Show(ctx, h)
	require.NoError(t, err)
	assert.False(t, st.HasBudget, "a refused SetBudget writes nothing")

	require.NoError(t, l.SetBudget(ctx, h, "", approxG(1, 1e-6)))
	st, err = l.Show(ctx, h)
	require.NoError(t, err)
	assert.True(t, st.HasBudget)
	assert.Equal(t, "mnist", st.Name, "an empty name keeps the existing one")
	assert.InDelta(t, 0.25, st.Remaining.Epsilon, 1e-12)
	assert.InDelta(t, 8e-7, st.Remaining.Delta, 1e-18)
	require.NoError(t, st.Fits(approxG(0.25, 8e-7)))
	require.ErrorIs(t, st.Fits(approxG(0.26, 1e-7)), ErrBudgetExceeded)
	require.NoError(t, l.SetBudget(ctx, h, "fashion-mnist", approxG(1, 1e-6)), "the same total again changes nothing")
	require.NoError(t, l.Rename(ctx, h, "fashion-mnist"))
	st, err = l.Show(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, "fashion-mnist", st.Name)
	// A total changes only explicitly, and never below what is spent.
	require.ErrorIs(t, l.SetBudget(ctx, h, "", approxG(2, 1e-6)), ErrBudgetSet)
	require.ErrorIs(t, l.ChangeBudget(ctx, h, approxG(0.7, 1e-6), ""), ErrBudgetExceeded)
}

// Under an (ε, δ) budget, ρ-granted Gaussian runs compose by the Gaussian-DP
// filter: four quarter-cap runs (the zCDP cap: all the classic rule admits)
// fit and leave μ_T² − 2ρ_cap for more, where basic composition of their
// conversions would allow one run.
func TestApproxBudgetWithZCDPRuns(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("zcdp")
	total := approxG(1, 1e-6)
	require.NoError(t, l.SetBudget(ctx, h, "", total))
	rhoCap, err := privacy.RhoForEpsDelta(1, 1e-6)
	require.NoError(t, err)
	for i := 0; i < 4; i++ {
		id := reserve(t, l, h, zcdpG(rhoCap/4))
		acct, err := privacy.NewAccountant(zcdpG(rhoCap / 4))
		require.NoError(t, err)
		_, err = acct.Gaussian("x", 1, 10, privacy.Budget{Noise: privacy.NoiseZCDP, Rho: rhoCap / 4})
		require.NoError(t, err)
		require.NoError(t, l.Settle(ctx, id, Outcome{Status: Succeeded, Steps: acct.Steps()}))
	}
	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, "gdp", st.Spent.Composition)
	assert.Less(t, st.Spent.Epsilon, 1.0, "the exact curve of the history is below the zCDP conversion")
	assert.InDelta(t, rhoCap, st.Spent.Rho, rhoCap*1e-8, "μ carries the lattice allowance")
	muT, err := privacy.GDPMu(1, 1e-6)
	require.NoError(t, err)
	left := muT*muT/2 - rhoCap // in ρ = μ²/2
	require.Greater(t, left, 0.0)
	assert.InDelta(t, left, st.Remaining.Rho, left*1e-6)
	_, err = l.Reserve(ctx, h, ReserveRequest{Estimator: "e", Grant: zcdpG(left * 1.01)})
	require.ErrorIs(t, err, ErrBudgetExceeded)
	reserve(t, l, h, zcdpG(left*0.999))
}

// Approx-granted runs that settle with a ρ (zCDP accountant) leave room for
// more runs than their grants suggested.
func TestApproxRunsSettleWithRho(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("approx-rho")
	require.NoError(t, l.SetBudget(ctx, h, "", approxG(1, 1e-6)))
	g := approxG(0.5, 5e-7)
	for i := 0; i < 2; i++ {
		id := reserve(t, l, h, g)
		acct, err := privacy.NewAccountant(g)
		require.NoError(t, err)
		rho, err := acct.TotalRho()
		require.NoError(t, err)
		_, err = acct.Gaussian("x", 1, 10, privacy.Budget{Noise: privacy.NoiseZCDP, Rho: rho / 2}) // the run used half its ρ
		require.NoError(t, err)
		require.NoError(t, l.Settle(ctx, id, Outcome{Status: Succeeded, Steps: acct.Steps()}))
		r, err := l.Get(ctx, id)
		require.NoError(t, err)
		assert.InDelta(t, rho/2, r.Charge.Rho, 1e-15)
		assert.Less(t, r.Charge.Epsilon, 0.5)
	}
	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	assert.Less(t, st.Spent.Epsilon, 1.0)
	assert.Greater(t, st.Remaining.Rho, 0.0)
	reserve(t, l, h, zcdpG(st.Remaining.Rho))
}

func TestConcurrentGoroutines(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("goroutines")
	require.NoError(t, l.SetBudget(ctx, h, "", pureG(1)))
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, refused := 0, 0
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := l.Reserve(ctx, h, ReserveRequest{Estimator: "e", Grant: pureG(0.125)})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case assert.ErrorIs(t, err, ErrBudgetExceeded):
				refused++
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 8, ok)
	assert.Equal(t, 4, refused)
}

// Settles, reservations and reads from many goroutines share one pool of
// two connections: none may wait for a connection while holding the
// ledger's lock that another, holding a connection, waits for.
func TestConcurrentSettlesAndReads(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("settles")
	require.NoError(t, l.SetBudget(ctx, h, "", pureG(100)))
	ids := make([]RunID, 16)
	for i := range ids {
		ids[i] = reserve(t, l, h, pureG(1))
	}
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(3)
		go func() {
			defer wg.Done()
			assert.NoError(t, l.Settle(ctx, id, Outcome{Status: Succeeded, Steps: []privacy.Step{pureStep(0.5)}}))
		}()
		go func() {
			defer wg.Done()
			_, err := l.Show(ctx, h)
			assert.NoError(t, err)
		}()
		go func() {
			defer wg.Done()
			_, err := l.Reserve(ctx, h, ReserveRequest{Estimator: "e", Grant: pureG(1)})
			assert.NoError(t, err)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // a failure bound for a deadlock, not a timing claim
		t.Fatal("concurrent settles and reads did not finish")
	}
	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, 16, st.Runs.Succeeded)
	assert.Equal(t, 16, st.Runs.Reserved)
	assert.InDelta(t, 16*0.5+16*1, st.Spent.Epsilon, 1e-9, "settled runs at their steps, open ones at their grants")
}

func TestStatusJSON(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("json")
	require.NoError(t, l.SetBudget(ctx, h, "fmnist", approxG(2, 1e-6)))
	id := reserve(t, l, h, approxG(0.5, 1e-7))
	require.NoError(t, l.Settle(ctx, id, Outcome{Status: Succeeded, Achieved: &privacy.Achieved{Epsilon: 0.5, Delta: 1e-7, Composition: "basic"}}))
	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	b, err := json.Marshal(st)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	assert.Equal(t, map[string]any{"kind": "approx", "epsilon": 2.0, "delta": 1e-6}, m["total"])
	assert.Equal(t, "fmnist", m["name"])
	assert.InDelta(t, 1.5, m["remaining"].(map[string]any)["epsilon"], 1e-12)
	assert.InDelta(t, 0.5, m["spent"].(map[string]any)["epsilon"], 1e-12)

	// Without a budget: no total and no remaining figures.
	st, err = l.Show(ctx, hashOf("no budget"))
	require.NoError(t, err)
	b, err = json.Marshal(st)
	require.NoError(t, err)
	m = nil
	require.NoError(t, json.Unmarshal(b, &m))
	assert.Nil(t, m["total"])
	assert.NotContains(t, m, "remaining")

	runs, err := l.History(ctx, h)
	require.NoError(t, err)
	b, err = json.Marshal(runs)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"grant":{"kind":"approx","epsilon":0.5,"delta":1e-7}`)
	assert.Contains(t, string(b), `"state":"succeeded"`)

	nb, err := l.Show(ctx, hashOf("other"))
	require.NoError(t, err)
	b, err = json.Marshal(nb)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"total":null`)
}

func TestCorruptFiles(t *testing.T) {
	ctx := context.Background()

	t.Run("not a database", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, FileName)
		junk := []byte(strings.Repeat("this is not a ledger\n", 300))
		require.NoError(t, os.WriteFile(path, junk, 0o600))
		_, err := Open(ctx, dir)
		require.ErrorIs(t, err, ErrCorrupt)
		assert.Contains(t, err.Error(), path)
		t.Log(err)
		got, rerr := os.ReadFile(path)
		require.NoError(t, rerr)
		assert.Equal(t, junk, got, "the file is never reset")
	})

	t.Run("damaged pages", func(t *testing.T) {
		dir := t.TempDir()
		l, err := Open(ctx, dir)
		require.NoError(t, err)
		h := hashOf("damaged")
		require.NoError(t, l.SetBudget(ctx, h, "", pureG(100)))
		for i := 0; i < 50; i++ {
			id := reserve(t, l, h, pureG(0.5))
			require.NoError(t, l.Settle(ctx, id, Outcome{Status: Failed, NoiseDrawn: true, Error: strings.Repeat("x", 200)}))
		}
		_, err = l.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
		require.NoError(t, err)
		require.NoError(t, l.Close())
		path := filepath.Join(dir, FileName)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Greater(t, len(b), 3*4096)
		for i := 4096 + 100; i < len(b); i += 7 { // keep the header, scribble over the rest
			b[i] ^= 0x5a
		}
		require.NoError(t, os.WriteFile(path, b, 0o600))
		l2, err := Open(ctx, dir)
		if err == nil {
			defer l2.Close()
			_, err = l2.Show(ctx, h)
		}
		require.ErrorIs(t, err, ErrCorrupt)
		assert.Contains(t, err.Error(), path)
		t.Log(err)
	})

	t.Run("another application's database", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, FileName)
		db, err := sql.Open("sqlite", path)
		require.NoError(t, err)
		_, err = db.Exec("CREATE TABLE notes(x TEXT)")
		require.NoError(t, err)
		require.NoError(t, db.Close())
		_, err = Open(ctx, dir)
		require.ErrorIs(t, err, ErrCorrupt)
		assert.Contains(t, err.Error(), path)
	})

	t.Run("newer schema", func(t *testing.T) {
		dir := t.TempDir()
		l, err := Open(ctx, dir)
		require.NoError(t, err)
		_, err = l.db.ExecContext(ctx, "INSERT INTO schema_migrations(version, description, applied_at) VALUES (?, 'future', 'now')", SchemaVersion+1)
		require.NoError(t, err)
		require.NoError(t, l.Close())
		_, err = Open(ctx, dir)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "newer than this dplr supports")
	})
}

// Under an (ε, δ) total, a run granted (ε, δ) (no ρ statement) cannot
// join a history holding a ρ-only run: the privacy package's composition,
// which admission uses, covers neither basic nor zCDP composition of both.
// Nothing is written.
func TestApproxRunNextToRhoOnlyRunIsIncompatible(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("mixed")
	require.NoError(t, l.SetBudget(ctx, h, "", approxG(1, 1e-6)))
	reserve(t, l, h, zcdpG(0.001))
	_, err := l.Reserve(ctx, h, ReserveRequest{Estimator: "e", Grant: approxG(0.2, 1e-7)})
	require.ErrorIs(t, err, ErrIncompatible)
	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Runs.Total)
}

func TestOutcomeOf(t *testing.T) {
	steps := []privacy.Step{pureStep(0.1)}
	boom := errors.New("boom")
	tests := []struct {
		name  string
		err   error
		steps []privacy.Step
		want  Outcome
	}{
		{"success", nil, steps, Outcome{Status: Succeeded, Steps: steps}},
		{"failed after a step", boom, steps, Outcome{Status: Failed, Steps: steps, NoiseDrawn: true, Error: "boom"}},
		{"failed before any step", boom, []privacy.Step{}, Outcome{Status: Failed, Steps: []privacy.Step{}, Error: "boom"}},
		{"failed, steps unknown", boom, nil, Outcome{Status: Failed, NoiseDrawn: true, Error: "boom"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, OutcomeOf(tc.err, tc.steps))
		})
	}
}
