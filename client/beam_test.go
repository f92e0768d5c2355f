package client_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"

	"github.com/dplr/dplr/client"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/pass"
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
