package fedrep

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// noise=paper reproduces Jain et al.'s noise multiplier
// Δ = √(8 ln(1/δ))/ε on both U-step statistics (×√T when every user is in
// every iteration), records the true zCDP cost, stays within the grant, and
// is refused where the paper's condition does not hold.
func TestAltMinPaperCalibration(t *testing.T) {
	g := genUsers(t, 400, 10, 6, 2, 0.01, 3)
	cases := []struct {
		name    string
		groups  string
		grant   privacy.Grant
		mult    float64
		wantErr string
	}{
		{"disjoint groups", "disjoint", approx(1), math.Sqrt(8*math.Log(1e6)) / 1, ""},
		{"disjoint groups, ε = 4", "disjoint", approx(4), math.Sqrt(8*math.Log(1e6)) / 4, ""},
		{"all users, T = 5", "all", approx(2), math.Sqrt(5) * math.Sqrt(8*math.Log(1e6)) / 2, ""},
		{"ρ grant refused", "disjoint", privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.1}, 0, "needs an (ε, δ) grant"},
		{"ε above ln(1/δ) refused", "disjoint", privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 20, Delta: 1e-6}, 0, "ε ≤ ln(1/δ)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw := map[string]string{"rank": "2", "iterations": "5", "noise": "paper", "groups": tc.groups, "clip_w": "1", "clip_y": "1", "output_v": "false"}
			if tc.wantErr != "" {
				seed := uint64(1)
				_, acct, err := sdk.RunLocal(context.Background(), PrivAltMin{}, g.Data, raw, tc.grant, sdk.LocalOptions{Seed: &seed})
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				assert.Nil(t, acct, "a refused calibration is refused pre-flight, spending nothing")
				return
			}
			_, acct := fit(t, PrivAltMin{}, g.Data, raw, tc.grant, 1)
			var loop int
			for _, st := range acct.Steps() {
				if !strings.Contains(st.Name, "U-step statistic") {
					continue
				}
				loop++
				// σ = Δ_sens·multiplier, up to the noise-grid allowance.
				assert.InDelta(t, tc.mult, st.Scale/st.QuerySensitivity, 1e-9*tc.mult, st.Name)
				assert.InDelta(t, privacy.RhoOfGaussian(st.QuerySensitivity, st.QuerySensitivity*tc.mult), st.Rho, 1e-9*st.Rho, st.Name)
			}
			want := 2
			if tc.groups == "all" {
				want = 10
			}
			assert.Equal(t, want, loop, "one A and one b release per loop (disjoint) or per iteration (all)")
			total, err := acct.TotalRho()
			require.NoError(t, err)
			var spent float64
			for _, st := range acct.Steps() {
				spent += st.Rho
			}
			assert.LessOrEqual(t, spent, total*(1+1e-12), "the run stays within its grant")
		})
	}
}

// The default zCDP calibration spends the whole grant and puts less noise
// on the U-step statistics than the paper's multiplier at the same (ε, δ).
func TestAltMinPaperNoisierThanZCDP(t *testing.T) {
	g := genUsers(t, 400, 10, 6, 2, 0.01, 3)
	raw := map[string]string{"rank": "2", "iterations": "5", "clip_w": "1", "clip_y": "1", "output_v": "false"}
	def, _ := fit(t, PrivAltMin{}, g.Data, raw, approx(1), 1)
	raw["noise"] = "paper"
	pap, _ := fit(t, PrivAltMin{}, g.Data, raw, approx(1), 1)
	assert.Greater(t, scalar(t, pap, "sigma_A"), scalar(t, def, "sigma_A"))
	assert.Greater(t, scalar(t, pap, "sigma_b"), scalar(t, def, "sigma_b"))
}

// Requests the fedrep estimators refuse as such are sdk.BadRequest (usage
// errors for the host) and are refused before any privacy step.
func TestRefusedRequestsAreBadRequests(t *testing.T) {
	g := genUsers(t, 60, 10, 6, 2, 0.01, 4)
	cases := []struct {
		name  string
		est   sdk.Estimator
		raw   map[string]string
		grant privacy.Grant
	}{
		{"FedRep rank above d", PrivateFedRep{}, map[string]string{"rank": "7"}, approx(1)},
		{"FedRep theory batch below rank", PrivateFedRep{}, map[string]string{"rank": "2", "mode": "theory", "batch": "1"}, approx(1)},
		{"FedRep paper calibration under ρ", PrivateFedRep{}, map[string]string{"rank": "2", "noise": "paper"}, privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.1}},
		{"AltMin more groups than users", PrivAltMin{}, map[string]string{"rank": "2", "iterations": "500"}, approx(1)},
		{"AltMin paper above ln(1/δ)", PrivAltMin{}, map[string]string{"rank": "2", "noise": "paper"}, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 20, Delta: 1e-6}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			seed := uint64(1)
			_, acct, err := sdk.RunLocal(context.Background(), tc.est, g.Data, tc.raw, tc.grant, sdk.LocalOptions{Seed: &seed})
			require.Error(t, err)
			assert.True(t, sdk.IsBadRequest(err), "refusal not marked: %v", err)
			if acct != nil {
				assert.Empty(t, acct.Steps())
			}
		})
	}
}
