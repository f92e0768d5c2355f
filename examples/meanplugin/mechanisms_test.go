package meanplugin

import (
	"testing"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk/sdktest"
)

// The example declares its one Gaussian release, and uses exactly that.
func TestMechanismsDeclaredExactly(t *testing.T) {
	sdktest.RunDeclared(t, Mean{},
		sdktest.Case{Name: "exact", Data: rowsOf(50, 1, 2), Grant: privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}},
		sdktest.Case{Name: "zcdp", Data: rowsOf(50, 1, 2), Params: map[string]string{"noise": "zcdp"}, Grant: privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.5}})
}
