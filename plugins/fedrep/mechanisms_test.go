package fedrep

import (
	"testing"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk/sdktest"
)

// Each estimator declares exactly the mechanisms its fit uses: Gaussian
// releases, plus the exponential mechanism of a private selection; a net's
// exponential mechanism for fedrep-classify-exact.
func TestMechanismsDeclaredExactly(t *testing.T) {
	g := genUsers(t, 120, 10, 6, 2, 0.01, 31)
	cls := signed(g.Data)
	zcdp := privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.5}
	sdktest.RunDeclared(t, PrivateFedRep{},
		sdktest.Case{Name: "default (private clips)", Data: g.Data, Params: map[string]string{"iterations": "2"}, Grant: approx(1)},
		sdktest.Case{Name: "private selection", Data: g.Data, Params: map[string]string{"iterations": "2", "select": "rank=1,2", "local_fraction": "0.5"}, Grant: approx(4)})
	sdktest.RunDeclared(t, PrivAltMin{},
		sdktest.Case{Name: "disjoint groups", Data: g.Data, Params: map[string]string{"iterations": "3"}, Grant: approx(1)})
	sdktest.RunDeclared(t, Classify{},
		sdktest.Case{Name: "default", Data: cls, Params: map[string]string{"iterations": "2"}, Grant: approx(1)})
	sdktest.RunDeclared(t, ClassifyExact{},
		sdktest.Case{Name: "zcdp", Data: cls, Grant: zcdp})
}
