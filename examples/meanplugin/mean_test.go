package meanplugin

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/engine/sdk/sdktest"
)

// rowsOf returns n copies of row as a rows data set.
func rowsOf(n int, row ...float64) *data.Dataset {
	x := mat.NewDense(n, len(row), nil)
	for i := 0; i < n; i++ {
		x.SetRow(i, row)
	}
	return &data.Dataset{Kind: data.Rows, X: x}
}

// The template estimator run in-process with sdk.RunLocal, as a plugin
// author's own tests would: the release is within a few noise standard
// deviations of the clipped mean, and the guarantee is filled in.
func TestMeanInProcess(t *testing.T) {
	seed := uint64(11)
	approx := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	cases := []struct {
		name  string
		data  *data.Dataset
		clip  string
		noise string
		grant privacy.Grant
		want  []float64 // mean of the clipped rows
		kind  privacy.GuaranteeKind
	}{
		// A zCDP-calibrated Gaussian step under an (ε, δ) grant: the exact
		// Gaussian composition states a smaller ε than the grant's.
		{"rows inside the clip", rowsOf(20000, 0.3, -0.4), "1", "zcdp", approx, []float64{0.3, -0.4}, privacy.Approx},
		{"rows scaled down to the clip", rowsOf(20000, 3, 4), "1", "zcdp", approx, []float64{0.6, 0.8}, privacy.Approx},
		{"zCDP grant", rowsOf(20000, 0.3, -0.4), "2", "zcdp", privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.5}, []float64{0.3, -0.4}, privacy.ZCDP},
		// The default: the exact Gaussian curve, accounting "gdp".
		{"default exact noise", rowsOf(20000, 0.3, -0.4), "1", "", approx, []float64{0.3, -0.4}, privacy.Approx},
		{"exact noise under a zCDP grant", rowsOf(20000, 0.3, -0.4), "2", "exact", privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.5}, []float64{0.3, -0.4}, privacy.ZCDP},
		// One step calibrated to (ε, δ) directly: its own (ε, δ) is the
		// tightest statement (its ρ converts to a larger ε).
		{"analytic noise", rowsOf(20000, 0.3, -0.4), "1", "analytic", approx, []float64{0.3, -0.4}, privacy.Approx},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw := map[string]string{"clip": tc.clip}
			if tc.noise != "" {
				raw["noise"] = tc.noise
			}
			res, acct, err := sdk.RunLocal(context.Background(), Mean{}, tc.data, raw, tc.grant, sdk.LocalOptions{Seed: &seed})
			require.NoError(t, err)
			require.Len(t, acct.Steps(), 1, "one Gaussian release")
			require.Len(t, res.Matrices, 1)
			sigma := res.Scalars[0].Value
			require.Positive(t, sigma)
			got := res.Matrices[0].M.RawRowView(0)
			for j, w := range tc.want {
				assert.InDelta(t, w, got[j], 6*sigma, "coordinate %d", j)
			}
			g := res.Guarantee
			assert.Equal(t, tc.kind, g.Kind)
			assert.Empty(t, acct.Undrawn(), "the release was drawn")
			assert.True(t, g.Seeded, "a seeded run says so")
			if tc.grant.Kind == privacy.GrantApprox {
				assert.LessOrEqual(t, g.Epsilon, 1+1e-9)
			} else {
				assert.InDelta(t, 0.5, g.Rho, 1e-12)
			}
		})
	}
}

func TestRawMeanIsExactAndNotPrivate(t *testing.T) {
	res, acct, err := sdk.RunLocal(context.Background(), RawMean{}, rowsOf(10, 3, 4), nil,
		privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1}, sdk.LocalOptions{})
	require.NoError(t, err)
	assert.Empty(t, acct.Steps())
	assert.Equal(t, privacy.None, res.Guarantee.Kind)
	got := res.Matrices[0].M.RawRowView(0)
	assert.InDelta(t, 3, got[0], 1e-12)
	assert.InDelta(t, 4, got[1], 1e-12)
}

func TestMeanRefusesBadRequests(t *testing.T) {
	seed := uint64(1)
	d := rowsOf(10, 1, 1)
	cases := []struct {
		name  string
		raw   map[string]string
		grant privacy.Grant
		want  string
	}{
		{"non-positive clip", map[string]string{"clip": "0"}, privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1}, "must be greater than 0"},
		{"unknown noise", map[string]string{"noise": "fancy"}, privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1}, `"fancy" is not one of zcdp, exact, classical, analytic`},
		{"classical noise needs an (ε, δ) grant", map[string]string{"noise": "classical"}, privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1}, "needs an (ε, δ) grant"},
		{"pure budget", nil, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1}, "does not accept a pure budget"},
		{"unknown parameter", map[string]string{"rank": "2"}, privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1}, `unknown parameter "rank"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, acct, err := sdk.RunLocal(context.Background(), Mean{}, d, tc.raw, tc.grant, sdk.LocalOptions{Seed: &seed})
			assert.ErrorContains(t, err, tc.want)
			assert.True(t, sdk.IsBadRequest(err), "a refused request, not an estimator failure")
			if acct != nil {
				assert.Empty(t, acct.Steps(), "refused before any step")
			}
		})
	}
}

// The SDK's conformance suite, as every plugin runs it.
func TestConformance(t *testing.T) {
	approx := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	sdktest.Run(t, Mean{},
		sdktest.Case{Name: "defaults", Data: rowsOf(200, 3, 4), Grant: approx},
		sdktest.Case{Name: "analytic", Data: rowsOf(200, 0.3, 0.4), Grant: approx, Params: map[string]string{"noise": "analytic", "clip": "2"}},
		sdktest.Case{Name: "exact", Data: rowsOf(200, 0.3, 0.4), Grant: approx, Params: map[string]string{"noise": "exact"}},
		sdktest.Case{Name: "ρ grant", Data: rowsOf(200, 0.3, 0.4), Grant: privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.5}},
		sdktest.Case{Name: "classical needs an (ε, δ) grant", Data: rowsOf(200, 1, 1), Grant: privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.5},
			Params: map[string]string{"noise": "classical"}, Refuse: "needs an (ε, δ) grant"},
		sdktest.Case{Name: "δ against n", Data: rowsOf(200, 1, 1), Grant: privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 0.01}, Refuse: "not small against the 200 rows"},
	)
	sdktest.Run(t, RawMean{}, sdktest.Case{Name: "reference", Data: rowsOf(20, 3, 4), Grant: privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1}})
}

// noise=exact (the default) calibrates σ through the exact Gaussian curve:
// at (1, 1e-6) σ/Δ = 4.22 where zCDP needs 4.53 (more than 6 % less noise),
// and the guarantee names the accountant (gdp) and meets the grant exactly.
func TestMeanExactDefault(t *testing.T) {
	seed := uint64(3)
	grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	d := rowsOf(1000, 0.3, -0.4)
	ex, _, err := sdk.RunLocal(context.Background(), Mean{}, d, nil, grant, sdk.LocalOptions{Seed: &seed})
	require.NoError(t, err)
	zc, _, err := sdk.RunLocal(context.Background(), Mean{}, d, map[string]string{"noise": "zcdp"}, grant, sdk.LocalOptions{Seed: &seed})
	require.NoError(t, err)
	sens := 2.0 / 1000
	se, sz := ex.Scalars[0].Value, zc.Scalars[0].Value
	t.Logf("σ/Δ exact %.4f, zcdp %.4f (%.1f %% less)", se/sens, sz/sens, 100*(1-se/sz))
	assert.Less(t, se, 0.94*sz)
	assert.InDelta(t, 4.22, se/sens, 0.01)
	assert.Equal(t, "gdp", ex.Guarantee.Accounting)
	assert.InDelta(t, 1, ex.Guarantee.Epsilon, 1e-6)
	assert.LessOrEqual(t, ex.Guarantee.Epsilon, 1.0)
}
