package host

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// A shared rank parameter the data cannot support is refused before any
// budget is reserved, naming the dimension it exceeds.
func TestCheckRank(t *testing.T) {
	spec := []sdk.ParamSpec{{Name: "rank", Type: sdk.Int, Default: "2", Min: sdk.Bound(1)}}
	cases := []struct {
		name    string
		rank    string
		h       dataio.Handle
		wantErr string
	}{
		{"rows within p", "10", dataio.Handle{Kind: data.Rows, N: 100, P: 10}, ""},
		{"rows above p", "11", dataio.Handle{Kind: data.Rows, N: 100, P: 10}, "rank = 11 exceeds the data's dimension p = 10"},
		{"default rank above p", "", dataio.Handle{Kind: data.Rows, N: 100, P: 1}, "rank = 2 exceeds"},
		{"users above features", "51", dataio.Handle{Kind: data.Users, N: 100, P: 50}, "p = 50"},
		{"trace within min(d1, d2)", "20", dataio.Handle{Kind: data.Trace, N: 100, P: 600, D1: 30, D2: 20}, ""},
		{"trace above min(d1, d2)", "21", dataio.Handle{Kind: data.Trace, N: 100, P: 600, D1: 30, D2: 20}, "min(d1, d2) = min(30, 20)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw := map[string]string{}
			if tc.rank != "" {
				raw["rank"] = tc.rank
			}
			p, err := sdk.ValidateParams(spec, raw)
			require.NoError(t, err)
			err = checkRank(p, tc.h)
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
	p, err := sdk.ValidateParams([]sdk.ParamSpec{{Name: "clip", Type: sdk.Float, Default: "1"}}, nil)
	require.NoError(t, err)
	assert.NoError(t, checkRank(p, dataio.Handle{Kind: data.Rows, P: 1}), "estimators without a rank are not checked")
}

func TestSaneGrant(t *testing.T) {
	cases := []struct {
		name string
		g    privacy.Grant
		want string
	}{
		{"ordinary (ε, δ)", privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}, ""},
		{"ordinary ρ", privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.05}, ""},
		{"largest ε", privacy.Grant{Kind: privacy.GrantPure, Epsilon: MaxEpsilon}, ""},
		{"ε = 1e308", privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1e308, Delta: 1e-6}, "usable range"},
		{"ε = 1e-300", privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1e-300}, "usable range"},
		{"ρ = 1e5", privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1e5}, "usable range"},
		{"ρ = 1e-300", privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1e-300}, "usable range"},
		{"δ = 1", privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1}, "delta"},
		{"no kind", privacy.Grant{}, "unknown grant kind"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := SaneGrant(tc.g)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestFormatBytes(t *testing.T) {
	assert.Equal(t, "512 B", FormatBytes(512))
	assert.Equal(t, "1.5 KiB", FormatBytes(1536))
	assert.Equal(t, "1 PiB", FormatBytes(1<<50))
}

func TestSaneParams(t *testing.T) {
	specs := []sdk.ParamSpec{{Name: "clip", Type: sdk.Float, Default: "1"}, {Name: "sigma_xi", Type: sdk.Float, Default: "0"}, {Name: "k", Type: sdk.Int, Default: "2"}, {Name: "bound", Type: sdk.String, Default: "auto"}}
	cases := []struct {
		raw  map[string]string
		want string
	}{
		{map[string]string{}, ""},
		{map[string]string{"clip": "1e-99", "sigma_xi": "0"}, ""},
		{map[string]string{"clip": "-3e50"}, ""},
		{map[string]string{"clip": "1e-300"}, "clip = 1e-300"},
		{map[string]string{"sigma_xi": "1e101"}, "sigma_xi = 1e+101"},
		// A text parameter that takes a number or a word (pca's
		// clip=auto) is bounded when it is given a number.
		{map[string]string{"bound": "auto"}, ""},
		{map[string]string{"bound": "2.5"}, ""},
		{map[string]string{"bound": "1e-300"}, "bound = 1e-300"},
	}
	for _, tc := range cases {
		p, err := sdk.ValidateParams(specs, tc.raw)
		require.NoError(t, err)
		err = saneParams(specs, p)
		if tc.want == "" {
			assert.NoError(t, err, "%v", tc.raw)
			continue
		}
		assert.ErrorContains(t, err, tc.want)
	}
}
