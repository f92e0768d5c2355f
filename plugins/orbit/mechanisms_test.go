package orbit

import (
	"testing"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk/sdktest"
)

// Each estimator declares exactly the mechanisms its fit uses, with and
// without the clip=auto quantile.
func TestMechanismsDeclaredExactly(t *testing.T) {
	ds := genData(t, 400, 8, 2, 71)
	approx := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	sdktest.RunDeclared(t, EM{},
		sdktest.Case{Name: "k = 1", Data: ds, Params: map[string]string{"rank": "1", "clip": "2"}, Grant: pure(1)},
		sdktest.Case{Name: "clip=auto", Data: ds, Params: map[string]string{"rank": "1", "clip": "auto"}, Grant: pure(1)})
	sdktest.RunDeclared(t, RankK{},
		sdktest.Case{Name: "k = 1", Data: ds, Params: map[string]string{"rank": "1", "clip": "2"}, Grant: approx},
		sdktest.Case{Name: "clip=auto", Data: ds, Params: map[string]string{"rank": "1", "clip": "auto"}, Grant: approx})
	sdktest.RunDeclared(t, Deflation{},
		sdktest.Case{Name: "k = 2", Data: ds, Params: map[string]string{"rank": "2", "clip": "2"}, Grant: pure(1)})
	sdktest.RunDeclared(t, Gauss{},
		sdktest.Case{Name: "Gaussian only", Data: ds, Params: map[string]string{"rank": "2", "clip": "2"}, Grant: approx},
		sdktest.Case{Name: "clip=auto", Data: ds, Params: map[string]string{"rank": "2", "clip": "auto"}, Grant: approx})
}
