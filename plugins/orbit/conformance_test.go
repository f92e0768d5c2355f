package orbit

import (
	"testing"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk/sdktest"
)

// The core conformance suite on every orbit estimator (see the pca
// plugin's TestSDKConformance for what it checks).
func TestSDKConformance(t *testing.T) {
	ds := genData(t, 400, 8, 2, 71)
	approx := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	rank := func(k string, kv ...string) map[string]string {
		m := map[string]string{"rank": k}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cases := map[string][]sdktest.Case{
		"orbit-em": {
			{Name: "exact k = 1", Data: ds, Params: rank("1"), Grant: pure(1)},
			{Name: "gibbs k = 3, (ε, δ) grant", Data: ds, Params: rank("3", "spectrum", "3,2,1", "iterations", "20"), Grant: approx},
			{Name: "paper", Data: ds, Params: rank("1", "sensitivity", "paper"), Grant: pure(1)},
			{Name: "bad spectrum", Data: ds, Params: rank("2", "spectrum", "1,2"), Grant: pure(1), Refuse: "non-increasing"},
		},
		"orbit-rank-k": {
			{Name: "k = 1", Data: ds, Params: rank("1"), Grant: approx},
			{Name: "k = 2", Data: ds, Params: rank("2", "iterations", "20"), Grant: pure(2)},
		},
		"orbit-deflation": {
			{Name: "k = 3", Data: ds, Params: rank("3"), Grant: pure(1)},
			{Name: "k = d, (ε, δ) grant", Data: ds, Params: rank("8"), Grant: approx},
			{Name: "k = 3, noise=zcdp", Data: ds, Params: rank("3", "noise", "zcdp"), Grant: approx},
			{Name: "k = 3, noise=pure", Data: ds, Params: rank("3", "noise", "pure"), Grant: approx},
		},
		"orbit-gauss": {
			{Name: "exact (default)", Data: ds, Params: rank("2"), Grant: approx},
			{Name: "zcdp", Data: ds, Params: rank("2", "noise", "zcdp"), Grant: approx},
			{Name: "analytic, private spectrum", Data: ds, Params: rank("2", "noise", "analytic", "spectrum", "private"), Grant: approx},
			{Name: "rank above d", Data: ds, Params: rank("9"), Grant: approx, Refuse: "rank 9"},
		},
		"orbit-nonprivate": {
			{Name: "reference", Data: ds, Params: rank("2", "spectrum", "true"), Grant: approx},
		},
	}
	for _, est := range Estimators() {
		name := est.Info().Name
		t.Run(name, func(t *testing.T) { sdktest.Run(t, est, cases[name]...) })
	}
}
