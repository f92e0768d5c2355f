package stats

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/engine/sdk/sdktest"
	"github.com/dplr/dplr/examples/meanplugin"
	"github.com/dplr/dplr/plugins/fedrep"
	"github.com/dplr/dplr/plugins/orbit"
	"github.com/dplr/dplr/plugins/pca"
	"github.com/dplr/dplr/plugins/rgrad"
)

// prismPasser runs every pass as a Beam pipeline on prism over the shards
// (RunPass), as `dplr fit --engine beam` does.
type prismPasser struct {
	glob  string
	shape *data.Remote
}

func (b prismPasser) Pass(ctx context.Context, req data.PassRequest) (*data.PassResult, error) {
	return RunPass(ctx, b.glob, b.shape, ReadOptions{}, req, Options{})
}

// needsData lists the estimators that cannot run on shards, each with the
// reason (docs/beam.md): nothing else may refuse.
var needsData = map[string]string{
	"fedrep-classify-exact": "its exact logistic heads are fitted on each user's rows in the estimator (no users pass computes them)",
}

// options are the requests' parameters beyond the rank, where an option's
// default cannot run on shards (each refusal says so, and docs/beam.md
// lists them): the FedRep estimators' per-user heads (output_v=true,
// DERIVATIONS §14) and orbit-nonprivate's exact norm quantile (clip=auto).
// The orbit samplers run at rank 1, as in their paper: a Gibbs chain is
// chaotic in its input, so at higher ranks the summation order of the
// pipelines (rounding at 1e-16) leads it elsewhere.
var options = map[string]map[string]string{
	"orbit-nonprivate":  {"clip": "3"},
	"orbit-em":          {"rank": "1"},
	"orbit-rank-k":      {"rank": "1"},
	"fedrep-private":    {"output_v": "false"},
	"fedrep-nonprivate": {"output_v": "false"},
	"fedrep-privaltmin": {"output_v": "false"},
	"fedrep-classify":   {"output_v": "false"},
}

// TestEveryEstimatorThroughPrism is the conformance check through Beam:
// every estimator of every plugin, and of the example plugin (the template
// third parties copy, which gets its pass path from the SDK alone), fitted
// on shards it reaches only through prism pipelines, declares the privacy
// steps and the guarantee of its fit on the one file holding the same data
// and, with the same seed, releases the same outputs (to 1e-9 relative:
// the pipelines sum in another order). Only the estimators of needsData
// may refuse, and they must.
func TestEveryEstimatorThroughPrism(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a prism pipeline per pass of every estimator")
	}
	rowsGlob, rows := func() (string, *data.Dataset) {
		const n, p = 240, 6
		dir := t.TempDir()
		whole := writeShards(t, dir, synth(n, p, 7), p, []int{100, 140}, false)
		ds, err := dataio.Load(whole, dataio.LoadOptions{})
		require.NoError(t, err)
		return dir + "/shard-*", ds
	}()
	traceGlob, trace := traceShards(t, genTraceData(t, 600, 5, 4), 250, 350)
	usersGlob, users := usersShards(t, usersData(30, 4, 3), 4)
	sets := map[data.Kind]struct {
		glob string
		ds   *data.Dataset
	}{data.Rows: {rowsGlob, rows}, data.Trace: {traceGlob, trace}, data.Users: {usersGlob, users}}

	var all []sdk.Estimator
	for _, list := range [][]sdk.Estimator{pca.Estimators(), orbit.Estimators(), rgrad.Estimators(), fedrep.Estimators(), meanplugin.Estimators()} {
		all = append(all, list...)
	}
	for _, est := range all {
		info, err := sdk.InfoOf(est) // the catalogue, with the parameters
		require.NoError(t, err)
		t.Run(info.Name, func(t *testing.T) {
			set, ok := sets[info.DataKind]
			require.True(t, ok, "data kind %s", info.DataKind)
			raw := map[string]string{}
			if slices.ContainsFunc(info.Params, func(p sdk.ParamSpec) bool { return p.Name == "rank" }) {
				raw["rank"] = "2"
			}
			maps.Copy(raw, options[info.Name])
			c := sdktest.Case{Name: "prism", Data: set.ds, Params: raw, Grant: grantFor(info), Seed: 5}
			err := sdktest.CheckThrough(est, c, prismPasser{glob: set.glob, shape: pass.ShapeOf(set.ds)}, 1e-9)
			if why, ok := needsData[info.Name]; ok {
				require.ErrorIs(t, err, sdktest.ErrNeedsData, "listed as needing the data (%s) but ran through passes", why)
				return
			}
			require.NoError(t, err)
		})
	}
}

// grantFor is a grant the estimator takes: (1, 1e-6) when it takes one,
// else ρ = 0.5, else ε = 1.
func grantFor(info sdk.Info) privacy.Grant {
	switch {
	case slices.Contains(info.Grants, privacy.GrantApprox):
		return privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	case slices.Contains(info.Grants, privacy.GrantZCDP):
		return privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.5}
	}
	return privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1}
}
