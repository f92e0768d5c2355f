package fedrep

import (
	"testing"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk/sdktest"
)

// The SDK's conformance suite on every fedrep estimator: catalogue from
// the options, parameter refusals before any step, seeds reproduce, every
// step through a release and drawn, outputs labelled, guarantee as
// certified.
func TestConformance(t *testing.T) {
	g := genUsers(t, 120, 10, 6, 2, 0.01, 31)
	cls := signed(g.Data)
	zcdp := privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.5}
	pure := privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1}
	t.Run("fedrep-private", func(t *testing.T) {
		sdktest.Run(t, PrivateFedRep{},
			sdktest.Case{Name: "default", Data: g.Data, Params: map[string]string{"iterations": "3"}, Grant: approx(1)},
			sdktest.Case{Name: "paper noise", Data: g.Data, Params: map[string]string{"iterations": "3", "noise": "paper", "clip": "1"}, Grant: approx(4)},
			sdktest.Case{Name: "theory", Data: g.Data, Params: map[string]string{"iterations": "2", "mode": "theory", "batch": "2", "holdout": "0.2"}, Grant: zcdp},
			sdktest.Case{Name: "theory without batch", Data: g.Data, Params: map[string]string{"mode": "theory"}, Grant: approx(1), Refuse: "explicit batch"},
			sdktest.Case{Name: "paper under a ρ grant", Data: g.Data, Params: map[string]string{"noise": "paper"}, Grant: zcdp, Refuse: "noise=paper"})
	})
	t.Run("fedrep-nonprivate", func(t *testing.T) {
		sdktest.Run(t, NonPrivateFedRep{},
			sdktest.Case{Name: "default", Data: g.Data, Params: map[string]string{"iterations": "3"}, Grant: approx(1)})
	})
	t.Run("fedrep-privaltmin", func(t *testing.T) {
		sdktest.Run(t, PrivAltMin{},
			sdktest.Case{Name: "all users", Data: g.Data, Params: map[string]string{"iterations": "3", "groups": "all"}, Grant: approx(1)},
			sdktest.Case{Name: "disjoint groups", Data: g.Data, Params: map[string]string{"iterations": "3"}, Grant: approx(1)},
			sdktest.Case{Name: "more groups than users", Data: g.Data, Params: map[string]string{"iterations": "500"}, Grant: approx(1), Refuse: "groups"})
	})
	t.Run("fedrep-classify", func(t *testing.T) {
		sdktest.Run(t, Classify{},
			sdktest.Case{Name: "default", Data: cls, Params: map[string]string{"iterations": "2"}, Grant: approx(1)},
			sdktest.Case{Name: "projected", Data: cls, Params: map[string]string{"iterations": "2", "kprime": "4"}, Grant: zcdp})
	})
	t.Run("fedrep-classify-exact", func(t *testing.T) {
		sdktest.Run(t, ClassifyExact{},
			sdktest.Case{Name: "pure", Data: cls, Grant: pure},
			sdktest.Case{Name: "zcdp", Data: cls, Grant: zcdp},
			sdktest.Case{Name: "k′ too large", Data: cls, Params: map[string]string{"kprime": "5"}, Grant: pure, Refuse: "k′ = 5 > 4"})
	})
}
