package rgrad

import (
	"testing"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk/sdktest"
)

// Every rgrad estimator passes the SDK's conformance suite: catalogue from
// the options struct, refusals before any step, seeded reproducibility,
// every step a drawn release, release classes on every output, and the
// guarantee its steps compose to — under an (ε, δ) grant, a ρ grant and the
// paper's classical split, with the refusals the Check hooks make.
func TestConformance(t *testing.T) {
	g := genTrace(t, 51, map[string]string{"n": "600", "d1": "10", "d2": "8"})
	approxGrant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	rhoGrant := privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.2}
	model := func(extra map[string]string) map[string]string {
		return modelParamsFor(g, mergeParams(map[string]string{"iterations": "3"}, extra))
	}
	for _, tc := range []struct {
		est   string
		cases []sdktest.Case
	}{
		{"rgrad-dp", []sdktest.Case{
			{Name: "explicit", Data: g.Data, Params: model(nil), Grant: approxGrant},
			{Name: "rho", Data: g.Data, Params: model(nil), Grant: rhoGrant},
			{Name: "paper classical", Data: g.Data, Params: model(map[string]string{"sensitivity": "paper", "noise": "classical"}), Grant: approxGrant},
			{Name: "former name calibration", Data: g.Data, Params: model(map[string]string{"calibration": "paper", "gaussian": "analytic"}), Grant: approxGrant, Refuse: "calibration= was replaced by sensitivity= (values: explicit, paper) and noise= (values: zcdp, exact, classical, analytic)"},
			{Name: "former name gaussian", Data: g.Data, Params: model(map[string]string{"gaussian": "analytic"}), Grant: approxGrant, Refuse: "gaussian= was renamed noise="},
			{Name: "rank", Data: g.Data, Params: model(map[string]string{"rank": "9"}), Grant: approxGrant, Refuse: "rank"},
			{Name: "sigma order", Data: g.Data, Params: model(map[string]string{"sigma1": "0.5"}), Grant: approxGrant, Refuse: "sigma1"},
			{Name: "classical under ρ", Data: g.Data, Params: model(map[string]string{"noise": "classical"}), Grant: rhoGrant, Refuse: "classical"},
		}},
		{"rgrad-weak", []sdktest.Case{
			{Name: "explicit", Data: g.Data, Params: model(nil), Grant: approxGrant},
			{Name: "no response noise", Data: g.Data, Params: model(map[string]string{"sigma_xi": "0"}), Grant: approxGrant, Refuse: "sigma_xi"},
		}},
		{"rgrad-strict", []sdktest.Case{
			{Name: "clipped", Data: g.Data, Params: map[string]string{"rank": "2", "clip_y": "8", "clip": "6", "iterations": "3"}, Grant: approxGrant},
			{Name: "rho", Data: g.Data, Params: map[string]string{"rank": "2", "clip_y": "8", "clip": "6", "iterations": "3"}, Grant: rhoGrant},
			{Name: "bad design", Data: g.Data, Params: map[string]string{"rank": "2", "clip_y": "8", "clip": "6", "design": "ar1:2"}, Grant: approxGrant, Refuse: "design"},
		}},
		{"rgrad-nonprivate", []sdktest.Case{
			{Name: "reference", Data: g.Data, Params: map[string]string{"rank": "2", "iterations": "3"}, Grant: approxGrant},
		}},
	} {
		t.Run(tc.est, func(t *testing.T) {
			sdktest.Run(t, estimatorByName(t, tc.est), tc.cases...)
		})
	}
}

func mergeParams(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
