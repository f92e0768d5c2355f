package client_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"

	"github.com/dplr/dplr/client"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/fedrep"
	"github.com/dplr/dplr/plugins/pca"
	"github.com/dplr/dplr/plugins/rgrad"
)

// TestFitRemote: a data set held remotely (client.RemoteOf, passes run by
// pass.Local here, by dplr-beam with client.DescribeBeam) fits rgrad-strict
// through its plugin as the same data in memory do, with the same seed,
// and draws on the same budget.
func TestFitRemote(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	m, err := gen.Lookup(gen.TraceModelName)
	require.NoError(t, err)
	g, err := gen.Run(m, map[string]string{"n": "1500", "d1": "8", "d2": "6", "rank": "2", "sigma1": "2", "sigmar": "1", "sigma_xi": "0.5"}, 5)
	require.NoError(t, err)
	ds := g.Data
	h, err := dataio.Prepare(ds, t.TempDir())
	require.NoError(t, err)
	require.NotNil(t, h.Source)
	remote, err := client.RemoteOf(data.Trace, pass.ShapeOf(ds), *h.Source, pass.Local(ds), "trace")
	require.NoError(t, err)
	params := client.Params{}.Int("rank", 2).Float("clip_y", 3).Float("clip", 6).Int("iterations", 3)
	seed := uint64(9)
	passes := 0
	rem, err := c.Fit(ctx, client.FitRequest{Estimator: "rgrad-strict", Params: params, Grant: client.ApproxDP(2, 1e-6), Data: remote, Seed: &seed,
		Pass: func(int, data.PassRequest) { passes++ }})
	require.NoError(t, err)
	assert.Equal(t, 4, passes, "one moment, then one gradient per iteration")
	loc, err := c.Fit(ctx, client.FitRequest{Estimator: "rgrad-strict", Params: params, Grant: client.ApproxDP(2, 1e-6), Data: client.InMemory(ds), Seed: &seed})
	require.NoError(t, err)
	assert.Equal(t, loc.Steps, rem.Steps)
	assert.Equal(t, loc.Data.Source, rem.Data.Source, "one budget")
	require.Len(t, rem.Matrices, len(loc.Matrices))
	for k, lm := range loc.Matrices {
		a, b := rem.Matrices[k].Value.RawMatrix().Data, lm.Value.RawMatrix().Data
		d := make([]float64, len(a))
		floats.SubTo(d, a, b)
		assert.LessOrEqual(t, floats.Norm(d, 2), 1e-12*floats.Norm(b, 2), lm.Name)
	}

	_, err = client.RemoteOf(data.Trace, nil, *h.Source, nil, "")
	assert.ErrorIs(t, err, client.ErrData)
}

// TestShippedEstimatorsThroughPasses: one estimator of each family with a
// path through aggregation passes (rows, trace, users), fitted through its
// real, sandboxed plugin process on a data set held only remotely
// (client.RemoteOf, pass.Local as the pass runner), declares exactly the
// privacy steps of sdk.RunLocal on the rows and, with the same seed,
// releases the same matrices up to the order of the float sums. Measured
// on the merged estimators (2026-11-24): pca-analyze-gauss center=private
// U 4.4e-15 relative, mean identical; rgrad-strict M 1.3e-14, U 1.2e-14;
// fedrep-private U identical. An estimator without the path on this build
// is skipped.
func TestShippedEstimatorsThroughPasses(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, model string
		gen         map[string]string
		params      client.Params
		ests        []sdk.Estimator
	}{
		{"pca-analyze-gauss", "spiked", map[string]string{"n": "1500", "p": "12"},
			client.Params{"rank": "2", "center": "private"}, pca.Estimators()},
		{"rgrad-strict", gen.TraceModelName,
			map[string]string{"n": "3000", "d1": "20", "d2": "15", "rank": "2", "sigma1": "2", "sigmar": "1", "sigma_xi": "0.5"},
			client.Params{"rank": "2", "clip_y": "3", "clip": "6", "iterations": "4"}, rgrad.Estimators()},
		{"fedrep-private", gen.UsersLowRankName,
			map[string]string{"users": "80", "samples": "12", "dim": "6", "rank": "2", "noise": "0.05"},
			client.Params{"iterations": "4", "output_v": "false"}, fedrep.Estimators()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := slices.IndexFunc(tc.ests, func(e sdk.Estimator) bool { return e.Info().Name == tc.name })
			require.GreaterOrEqual(t, i, 0, "no estimator %s", tc.name)
			est := tc.ests[i]
			info, err := sdk.InfoOf(est)
			require.NoError(t, err)
			if !info.Remote {
				t.Skipf("%s has no path through aggregation passes on this build", tc.name)
			}
			m, err := gen.Lookup(tc.model)
			require.NoError(t, err)
			g, err := gen.Run(m, tc.gen, 41)
			require.NoError(t, err)
			ds := g.Data
			grant := client.ApproxDP(2, 1e-6)
			seed := uint64(17)
			want, acct, err := sdk.RunLocal(ctx, est, ds, tc.params, grant, sdk.LocalOptions{Seed: &seed})
			require.NoError(t, err)

			h, err := dataio.Prepare(ds, t.TempDir())
			require.NoError(t, err)
			remote, err := client.RemoteOf(ds.Kind, pass.ShapeOf(ds), *h.Source, pass.Local(ds), tc.name)
			require.NoError(t, err)
			passes := 0
			res, err := c.Fit(ctx, client.FitRequest{Estimator: tc.name, Params: tc.params, Grant: grant, Data: remote, Seed: &seed,
				Pass: func(int, data.PassRequest) { passes++ }})
			require.NoError(t, err)
			assert.Positive(t, passes)
			assert.Equal(t, acct.Steps(), res.Steps, "the same privacy steps")
			require.Len(t, res.Matrices, len(want.Matrices))
			for k, wm := range want.Matrices {
				got, ref := res.Matrices[k].Value.RawMatrix().Data, wm.M.RawMatrix().Data
				d := make([]float64, len(got))
				floats.SubTo(d, got, ref)
				assert.LessOrEqual(t, floats.Norm(d, 2), 1e-12*floats.Norm(ref, 2), "matrix %s", wm.Name)
			}
		})
	}
}

// The work directory of a Beam fit that was killed (its process gone) is
// removed when the next Beam fit makes its own (issue 26 §3).
func TestBeamWorkDirSweepsKilledFits(t *testing.T) {
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	home := t.TempDir()
	left := filepath.Join(client.CacheDir(home), fmt.Sprintf("beam-%d-1", cmd.Process.Pid))
	require.NoError(t, os.MkdirAll(filepath.Join(left, "pass-1"), 0o700))
	dir, cleanup, err := client.BeamWorkDir(home)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(filepath.Base(dir), fmt.Sprintf("beam-%d-", os.Getpid())), dir)
	_, err = os.Stat(left)
	assert.True(t, os.IsNotExist(err), "the killed fit's directory is swept")
	cleanup()
	_, err = os.Stat(dir)
	assert.True(t, os.IsNotExist(err))
}
