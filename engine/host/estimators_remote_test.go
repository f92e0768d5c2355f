package host

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/fedrep"
	"github.com/dplr/dplr/plugins/pca"
	"github.com/dplr/dplr/plugins/rgrad"
)

// estimatorNamed returns the estimator called name among ests.
func estimatorNamed(t *testing.T, ests []sdk.Estimator, name string) sdk.Estimator {
	t.Helper()
	for _, e := range ests {
		if e.Info().Name == name {
			return e
		}
	}
	t.Fatalf("no estimator %s", name)
	return nil
}

// TestShippedEstimatorsThroughPasses: one estimator of each family with a
// path through aggregation passes (rows, trace, users), run by the host
// through its real, sandboxed plugin process on a data set the host holds
// only remotely (pass.Local as the host's pass runner), declares exactly
// the privacy steps of sdk.RunLocal on the rows and, with the same seed,
// releases the same matrices up to the order of the float sums. Measured
// on the merged estimators (2026-11-24): pca-analyze-gauss center=private
// U 4.4e-15 relative, mean identical; rgrad-strict M 1.3e-14, U 1.2e-14;
// fedrep-private U identical. An estimator without the path on this build
// is skipped.
func TestShippedEstimatorsThroughPasses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds three plugins")
	}
	for _, tc := range []struct {
		cmd, name, model string
		gen, params      map[string]string
		ests             []sdk.Estimator
	}{
		{"github.com/dplr/dplr/plugins/pca/cmd/dplr-pca", "pca-analyze-gauss", "spiked",
			map[string]string{"n": "1500", "p": "12"}, map[string]string{"rank": "2", "center": "private"}, pca.Estimators()},
		{"github.com/dplr/dplr/plugins/rgrad/cmd/dplr-rgrad", "rgrad-strict", gen.TraceModelName,
			map[string]string{"n": "3000", "d1": "20", "d2": "15", "rank": "2", "sigma1": "2", "sigmar": "1", "sigma_xi": "0.5"},
			map[string]string{"rank": "2", "clip_y": "3", "clip": "6", "iterations": "4"}, rgrad.Estimators()},
		{"github.com/dplr/dplr/plugins/fedrep/cmd/dplr-fedrep", "fedrep-private", gen.UsersLowRankName,
			map[string]string{"users": "80", "samples": "12", "dim": "6", "rank": "2", "noise": "0.05"},
			map[string]string{"iterations": "4", "output_v": "false"}, fedrep.Estimators()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			est := estimatorNamed(t, tc.ests, tc.name)
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
			grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 2, Delta: 1e-6}
			seed := uint64(17)
			want, acct, err := sdk.RunLocal(context.Background(), est, ds, tc.params, grant, sdk.LocalOptions{Seed: &seed})
			require.NoError(t, err)

			bin := filepath.Join(t.TempDir(), filepath.Base(tc.cmd))
			out, err := exec.Command("go", "build", "-o", bin, tc.cmd).CombinedOutput()
			require.NoError(t, err, string(out))
			p, err := Start(context.Background(), bin, Options{})
			require.NoError(t, err)
			defer p.Close()
			r, _ := startIn(t, "dplr-remote")
			r.Plugins = Plugins{p}
			sh := *pass.ShapeOf(ds)
			sh.Passer = pass.Local(ds)
			h := remoteHandle(&sh)
			h.Kind, h.D1, h.D2 = ds.Kind, ds.D1, ds.D2
			passes := 0
			res, err := r.Fit(context.Background(), FitRequest{Estimator: tc.name, Params: tc.params, Grant: grant, Data: h, Remote: &sh, Seed: &seed,
				Events: Events{Pass: func(int, data.PassRequest) { passes++ }}})
			require.NoError(t, err)
			assert.Positive(t, passes)
			assert.Equal(t, acct.Steps(), res.Outcome.Steps, "the same privacy steps")
			require.Len(t, res.Outcome.Matrices, len(want.Matrices))
			for k, wm := range want.Matrices {
				got, ref := res.Outcome.Matrices[k].Data, wm.M.RawMatrix().Data
				d := make([]float64, len(got))
				floats.SubTo(d, got, ref)
				assert.LessOrEqual(t, floats.Norm(d, 2), 1e-12*floats.Norm(ref, 2), "matrix %s", wm.Name)
			}
		})
	}
}
