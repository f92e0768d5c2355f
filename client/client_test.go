package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/client"
	"github.com/dplr/dplr/cmd/dplr/cli"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/ledger"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// newClient is a client on a fresh home with the test plugins.
func newClient(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.New(client.Options{Home: t.TempDir(), PluginDirs: []string{pluginDir}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// rows is a small rows data set from the spiked model.
func rows(t *testing.T) *data.Dataset {
	t.Helper()
	m, err := gen.Lookup("spiked")
	require.NoError(t, err)
	g, err := gen.Run(m, map[string]string{"n": "500", "p": "6"}, 3)
	require.NoError(t, err)
	return g.Data
}

func TestOptionsValidatedOnce(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	cases := []struct {
		name string
		opt  client.Options
	}{
		{"home is a file", client.Options{Home: file}},
		{"negative plugin timeout", client.Options{Home: t.TempDir(), PluginTimeout: -1}},
		{"negative output bound", client.Options{Home: t.TempDir(), MaxOutputBytes: -1}},
		{"negative memory limit", client.Options{Home: t.TempDir(), MaxMemory: -2}},
		{"missing manifest", client.Options{Home: t.TempDir(), Manifest: filepath.Join(t.TempDir(), "none")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client.New(tc.opt)
			require.Error(t, err)
			assert.ErrorIs(t, err, client.ErrUsage)
			assert.Equal(t, 2, client.ExitCode(err))
		})
	}
}

func TestDiscoverAndDescribe(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	est, err := c.Describe(ctx, "example-mean")
	require.NoError(t, err)
	assert.Equal(t, data.Rows, est.DataKind)
	assert.Equal(t, "example", est.Plugin.Name)
	assert.Contains(t, est.Grants, privacy.GrantZCDP)
	var names []string
	for _, p := range est.Params {
		names = append(names, p.Name)
	}
	assert.Contains(t, names, "clip")

	plugins, err := c.Plugins(ctx)
	require.NoError(t, err)
	var all []string
	for _, p := range plugins {
		all = append(all, p.Name)
	}
	assert.Subset(t, all, []string{"example", "pca", "rgrad", "fedrep"})

	_, err = c.Describe(ctx, "no-such-estimator")
	assert.ErrorIs(t, err, client.ErrUsage)
	assert.ErrorIs(t, err, client.ErrUnknownEstimator)
}

func TestPluginThatDoesNotStartIsAPluginFailure(t *testing.T) {
	t.Setenv("DPLR_BAD_MODE", "exit-start")
	c := newClient(t)
	_, err := c.Describe(context.Background(), "bad-exit-start")
	require.Error(t, err)
	assert.ErrorIs(t, err, client.ErrPlugin)
	assert.Equal(t, 4, client.ExitCode(err))
	assert.Contains(t, err.Error(), "exited with status 2")
}

func TestFitInMemory(t *testing.T) {
	c := newClient(t)
	seed := uint64(5)
	var steps []privacy.Step
	res, err := c.Fit(context.Background(), client.FitRequest{
		Estimator: "example-mean", Params: client.Params{}.Float("clip", 3), Grant: client.ApproxDP(1, 1e-6),
		Data: client.InMemory(rows(t)), Seed: &seed, Step: func(s privacy.Step) { steps = append(steps, s) }})
	require.NoError(t, err)
	mean, ok := res.Matrix("mean")
	require.True(t, ok)
	r, cols := mean.Dims()
	assert.Equal(t, []int{1, 6}, []int{r, cols})
	assert.Equal(t, privacy.Approx, res.Guarantee.Kind)
	assert.LessOrEqual(t, res.Guarantee.Epsilon, 1+1e-9)
	assert.True(t, res.Guarantee.Seeded)
	assert.Equal(t, 3.0, res.Params["clip"])
	assert.Contains(t, res.Public(), "mean")
	assert.Len(t, steps, len(res.Steps), "every verified step was announced")
	require.NotNil(t, res.Ledger)
	assert.Equal(t, 1, res.Ledger.Status.Runs.Succeeded)
	assert.Equal(t, 500, res.Data.N)
}

func TestFitFileAndMatrixAreOneDataSet(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	ds := rows(t)
	path := filepath.Join(t.TempDir(), "x.npy")
	raw := ds.X.RawMatrix()
	require.NoError(t, dataio.SaveNPYFloat64(path, []int{raw.Rows, raw.Cols}, raw.Data))
	k1, err := c.DatasetKey(ctx, client.File(path, dataio.LoadOptions{}))
	require.NoError(t, err)
	k2, err := c.DatasetKey(ctx, client.Rows(mat.DenseCopyOf(ds.X)))
	require.NoError(t, err)
	assert.Equal(t, k1, k2, "the same records from a file and from memory share one budget")
}

// spent is the data set's recorded charges and runs.
func spent(t *testing.T, c *client.Client, ref client.DatasetRef) (ledger.Spent, int) {
	t.Helper()
	st, err := c.ShowBudget(context.Background(), ref)
	require.NoError(t, err)
	return st.Spent, st.Runs.Succeeded + st.Runs.Failed - st.Runs.Refunded
}

func TestRefusalsSpendNothing(t *testing.T) {
	ctx := context.Background()
	good := client.Params{}.Float("clip", 3)
	nan := mat.NewDense(3, 2, []float64{1, 2, math.NaN(), 4, 5, 6})
	cases := []struct {
		name   string
		req    client.FitRequest
		budget privacy.Grant // set before the fit (zero: none)
		class  error
	}{
		{"bad parameter", client.FitRequest{Estimator: "example-mean", Params: client.Params{}.Float("clip", -1), Grant: client.ZCDP(0.1)}, privacy.Grant{}, client.ErrUsage},
		{"unknown parameter", client.FitRequest{Estimator: "example-mean", Params: good.Int("nope", 1), Grant: client.ZCDP(0.1)}, privacy.Grant{}, client.ErrUsage},
		{"absurd budget", client.FitRequest{Estimator: "example-mean", Params: good, Grant: client.ApproxDP(1e308, 1e-6)}, privacy.Grant{}, client.ErrUsage},
		{"no budget", client.FitRequest{Estimator: "example-mean", Params: good}, privacy.Grant{}, client.ErrUsage},
		{"budget exhausted", client.FitRequest{Estimator: "example-mean", Params: good, Grant: client.ZCDP(0.5)}, client.ZCDP(0.1), client.ErrBudget},
		{"non-private on a budget", client.FitRequest{Estimator: "example-mean-nonprivate", NonPrivate: true}, client.ZCDP(0.1), client.ErrBudget},
		{"non-private not allowed", client.FitRequest{Estimator: "example-mean-nonprivate"}, privacy.Grant{}, client.ErrUsage},
		{"negative timeout", client.FitRequest{Estimator: "example-mean", Params: good, Grant: client.ZCDP(0.1), Timeout: -1}, privacy.Grant{}, client.ErrUsage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t)
			d := client.InMemory(rows(t))
			ref := client.ByData(d)
			if tc.budget.Kind != "" {
				_, err := c.SetBudget(ctx, ref, tc.budget, client.BudgetOptions{Name: "spiked"})
				require.NoError(t, err)
			}
			tc.req.Data = d
			_, err := c.Fit(ctx, tc.req)
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.class)
			var ce *client.Error
			require.ErrorAs(t, err, &ce)
			assert.False(t, ce.Charged)
			sp, charged := spent(t, c, ref)
			assert.Equal(t, "none", sp.Composition, "nothing spent")
			assert.Zero(t, charged)
		})
	}
	t.Run("NaN data", func(t *testing.T) {
		c := newClient(t)
		_, err := c.Fit(ctx, client.FitRequest{Estimator: "example-mean", Params: good, Grant: client.ZCDP(0.1), Data: client.Rows(nan)})
		assert.ErrorIs(t, err, client.ErrData)
		assert.Equal(t, 5, client.ExitCode(err))
		ds, err := c.Datasets(ctx)
		require.NoError(t, err)
		assert.Empty(t, ds, "nothing recorded")
	})
	t.Run("NaN in a file", func(t *testing.T) {
		c := newClient(t)
		path := filepath.Join(t.TempDir(), "x.csv")
		require.NoError(t, os.WriteFile(path, []byte("1,2\nNaN,4\n5,6\n"), 0o644))
		_, err := c.Fit(ctx, client.FitRequest{Estimator: "example-mean", Params: good, Grant: client.ZCDP(0.1), Data: client.File(path, dataio.LoadOptions{})})
		assert.ErrorIs(t, err, client.ErrData)
	})
}

func TestBudgetExhaustedSuggestsRho(t *testing.T) {
	ctx := context.Background()
	c := newClient(t)
	d := client.InMemory(rows(t))
	// (0.75, 1e-6) holds μ_T² ≈ 0.033 under the Gaussian-DP filter: one
	// (0.6, 1e-7) run (μ² ≈ 0.0174) fits, a second does not.
	_, err := c.SetBudget(ctx, client.ByData(d), client.ApproxDP(0.75, 1e-6), client.BudgetOptions{Name: "s"})
	require.NoError(t, err)
	req := client.FitRequest{Estimator: "example-mean", Params: client.Params{}.Float("clip", 3), Grant: client.ApproxDP(0.6, 1e-7), Data: d}
	_, err = c.Fit(ctx, req)
	require.NoError(t, err)
	_, err = c.Fit(ctx, req)
	require.ErrorIs(t, err, client.ErrBudget)
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	if ce.SuggestedRho > 0 {
		rho, rerr := privacy.RhoForEpsDelta(0.6, 1e-7)
		require.NoError(t, rerr)
		assert.LessOrEqual(t, ce.SuggestedRho, rho)
	}
}

func TestBudgetOperations(t *testing.T) {
	ctx := context.Background()
	c := newClient(t)
	d := client.InMemory(rows(t))
	st, err := c.SetBudget(ctx, client.ByData(d), client.ZCDP(1), client.BudgetOptions{Name: "faces"})
	require.NoError(t, err)
	assert.True(t, st.HasBudget)
	assert.Equal(t, ledger.ReplaceRow, st.Relation)

	_, err = c.SetBudget(ctx, client.ByName("faces"), client.ZCDP(2), client.BudgetOptions{})
	assert.ErrorIs(t, err, client.ErrBudget)
	assert.True(t, client.IsBudgetSet(err))
	_, err = c.SetBudget(ctx, client.ByName("faces"), client.ZCDP(2), client.BudgetOptions{Change: true})
	assert.ErrorIs(t, err, client.ErrUsage, "a change needs a note")
	st, err = c.SetBudget(ctx, client.ByName("faces"), client.ZCDP(2), client.BudgetOptions{Change: true, Note: "approved"})
	require.NoError(t, err)
	assert.Equal(t, 2.0, st.Total.Rho)

	id, err := c.Charge(ctx, client.ByName("faces"), client.ZCDP(0.25), client.ChargeOptions{Note: "2025 report"})
	require.NoError(t, err)
	assert.NotZero(t, id)
	st, err = c.ShowBudget(ctx, client.ByHash(st.DataHash))
	require.NoError(t, err)
	assert.InDelta(t, 1.75, st.Remaining.Rho, 1e-9)

	other := client.InMemory(&data.Dataset{Kind: data.Rows, X: mat.NewDense(2, 2, []float64{9, 8, 7, 6})})
	alias, h, err := c.Link(ctx, client.ByData(other), "faces", "same people")
	require.NoError(t, err)
	assert.NotEqual(t, alias, h)
	assert.Equal(t, st.DataHash, h)

	hist, err := c.History(ctx, client.ByName("faces"))
	require.NoError(t, err)
	assert.Len(t, hist.Runs, 1)
	assert.NotEmpty(t, hist.Changes)
	ds, err := c.Datasets(ctx)
	require.NoError(t, err)
	assert.Len(t, ds, 1)
	_, path, err := c.VerifyLedger(ctx, false)
	require.NoError(t, err)
	assert.FileExists(t, path)

	_, err = c.ShowBudget(ctx, client.ByName("nobody"))
	assert.ErrorIs(t, err, client.ErrUsage)
	_, err = c.ShowBudget(ctx, client.DatasetRef{})
	assert.ErrorIs(t, err, client.ErrUsage)
}

func TestEstimatorAndPluginFailuresAreClassed(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		mode    string
		class   error
		charged bool
	}{
		{"estimator-error", client.ErrEstimator, false},
		{"crash-fit", client.ErrPlugin, true}, // after announcing a step
		{"bad-request", client.ErrUsage, false},
		{"late-refusal", client.ErrEstimator, true},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			t.Setenv("DPLR_BAD_MODE", tc.mode)
			c := newClient(t)
			_, err := c.Fit(ctx, client.FitRequest{Estimator: "bad-" + tc.mode, Grant: client.ApproxDP(1, 1e-6), Data: client.InMemory(rows(t))})
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.class)
			var ce *client.Error
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.charged, ce.Charged)
		})
	}
}

func TestInterrupted(t *testing.T) {
	c := newClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Fit(ctx, client.FitRequest{Estimator: "example-mean", Params: client.Params{}.Float("clip", 3), Grant: client.ZCDP(0.1), Data: client.InMemory(rows(t))})
	require.Error(t, err)
	assert.True(t, errors.Is(err, client.ErrInterrupted) || errors.Is(err, client.ErrPlugin), "%v", err)
}

func TestParams(t *testing.T) {
	base := client.Params{}.Int("rank", 1)
	_ = base.Int("rank", 3)
	assert.Equal(t, client.Params{"rank": "1"}, base, "setters do not modify their receiver")
	p := client.Params(nil).Int("rank", 2).Float("clip", 0.1).Bool("evaluate", true).String("noise", "zcdp")
	assert.Equal(t, client.Params{"rank": "2", "clip": "0.1", "evaluate": "true", "noise": "zcdp"}, p)
	info := sdk.Info{Params: []sdk.ParamSpec{{Name: "rank", Type: sdk.Int, Default: "1"}, {Name: "clip", Type: sdk.Float}}}
	assert.Equal(t, map[string]any{"rank": 2, "clip": 0.1}, client.TypedParams(info, map[string]string{"rank": "2", "clip": "0.1"}))
}

func TestFitGeneratedDirectoryReportsMetrics(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spiked")
	var out, errb bytes.Buffer
	code := cli.Main([]string{"gen", "spiked", "--out", dir, "--set", "n=1000", "--set", "p=8", "--seed", "2"}, &out, &errb)
	require.Zero(t, code, errb.String())
	c := newClient(t)
	res, err := c.Fit(context.Background(), client.FitRequest{Estimator: "pca-analyze-gauss",
		Params: client.Params{}.Int("rank", 2).Float("clip", 12), Grant: client.ApproxDP(1, 1e-6),
		Data: client.File(dir, dataio.LoadOptions{})})
	require.NoError(t, err)
	assert.NotEmpty(t, res.Metrics, "errors against the generating truth")
	assert.Equal(t, "spiked", res.Data.Name)
	key, err := c.DatasetKey(context.Background(), client.File(dir, dataio.LoadOptions{}))
	require.NoError(t, err)
	assert.Equal(t, res.Data.Source, key, "budget operations name the data set the fit charged")
}

func TestClosedClientRefuses(t *testing.T) {
	c := newClient(t)
	require.NoError(t, c.Close())
	_, err := c.Describe(context.Background(), "example-mean")
	assert.ErrorIs(t, err, client.ErrUsage)
}

func TestConcurrentFitsShareOneClient(t *testing.T) {
	c := newClient(t)
	ds := rows(t)
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := c.Fit(context.Background(), client.FitRequest{Estimator: "example-mean",
				Params: client.Params{}.Float("clip", 3), Grant: client.ZCDP(0.1), Data: client.InMemory(ds)})
			errs <- err
		}()
	}
	for range 3 {
		require.NoError(t, <-errs)
	}
	st, err := c.ShowBudget(context.Background(), client.ByData(client.InMemory(ds)))
	require.NoError(t, err)
	assert.Equal(t, 3, st.Runs.Succeeded)
	assert.InDelta(t, 0.3, st.Spent.Rho, 1e-9, "three ρ = 0.1 runs compose to 0.3")
}

// A fit's ledger closes while the caller releases the result; Close waits
// for it, so once Close returns the marker names every record of the fit
// and the WAL has been copied into the database file.
func TestCloseWaitsForTheFitsLedger(t *testing.T) {
	home := t.TempDir()
	c, err := client.New(client.Options{Home: home, PluginDirs: []string{pluginDir}})
	require.NoError(t, err)
	_, err = c.Fit(context.Background(), client.FitRequest{Estimator: "example-mean",
		Params: client.Params{}.Float("clip", 3), Grant: client.ZCDP(0.1), Data: client.InMemory(rows(t))})
	require.NoError(t, err)
	require.NoError(t, c.Close())
	b, err := os.ReadFile(filepath.Join(home, ledger.MarkerName))
	require.NoError(t, err)
	var m struct{ Seq int64 }
	require.NoError(t, json.Unmarshal(b, &m))
	assert.NoFileExists(t, filepath.Join(home, ledger.FileName+"-wal"))
	led, err := ledger.Open(context.Background(), home)
	require.NoError(t, err)
	defer led.Close()
	rep, err := led.Verify(context.Background())
	require.NoError(t, err)
	assert.Equal(t, rep.Records, m.Seq, "the marker names the fit's records")
}
