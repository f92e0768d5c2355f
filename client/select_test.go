package client_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/client"
)

// TestSelectIsOneRun: a private selection through the client is one run,
// one ledger record charged the grant once; the result names the choice
// and the candidates. A selection the budget cannot cover is refused
// before anything is reserved.
func TestSelectIsOneRun(t *testing.T) {
	ctx := context.Background()
	p := client.Params{}.Int("rank", 2).Select("clip_quantile", 0.5, 0.9)
	assert.Equal(t, "clip_quantile=0.5,0.9", p["select"])
	assert.Equal(t, "clip_quantile=0.5,0.9;rank=1,2", p.Select("rank", 1, 2)["select"])
	c := newClient(t)
	d := client.InMemory(rows(t))
	ref := client.ByData(d)
	_, err := c.SetBudget(ctx, ref, client.ApproxDP(3, 1e-5), client.BudgetOptions{Name: "spiked"})
	require.NoError(t, err)
	_, err = c.Fit(ctx, client.FitRequest{Estimator: "pca-analyze-gauss", Params: p, Grant: client.ApproxDP(5, 1e-6), Data: d})
	assert.ErrorIs(t, err, client.ErrBudget, "the whole selection's cost is checked against the total")
	_, runs := spent(t, c, ref)
	assert.Zero(t, runs, "a refused selection reserves nothing")
	res, err := c.Fit(ctx, client.FitRequest{Estimator: "pca-analyze-gauss", Params: p, Grant: client.ApproxDP(1, 1e-6), Data: d})
	require.NoError(t, err)
	q, ok := res.Scalar("selected_clip_quantile")
	require.True(t, ok)
	assert.Contains(t, []float64{0.5, 0.9}, q)
	sp, runs := spent(t, c, ref)
	assert.Equal(t, 1, runs, "one ledger run")
	assert.LessOrEqual(t, sp.Epsilon, 1+1e-9, "charged at most the grant, once")
	assert.InDelta(t, 1, sp.Epsilon, 1e-3, "the plan spends the whole grant")
}
