package rgrad

import (
	"testing"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk/sdktest"
)

// Every private rgrad estimator declares Gaussian releases only, and
// uses exactly those; given only the rank, the exponential mechanism of
// the private median too.
func TestMechanismsDeclaredExactly(t *testing.T) {
	g := genTrace(t, 51, map[string]string{"n": "600", "d1": "10", "d2": "8"})
	grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	model := modelParamsFor(g, map[string]string{"iterations": "2"})
	sdktest.RunDeclared(t, estimatorByName(t, "rgrad-dp"), sdktest.Case{Name: "explicit", Data: g.Data, Params: model, Grant: grant})
	sdktest.RunDeclared(t, estimatorByName(t, "rgrad-weak"), sdktest.Case{Name: "explicit", Data: g.Data, Params: model, Grant: grant})
	sdktest.RunDeclared(t, estimatorByName(t, "rgrad-strict"), sdktest.Case{Name: "clipped", Data: g.Data,
		Params: map[string]string{"rank": "2", "clip_y": "8", "clip": "6", "iterations": "2"}, Grant: grant})
	for _, name := range []string{"rgrad-dp", "rgrad-weak", "rgrad-strict"} {
		sdktest.RunDeclared(t, estimatorByName(t, name), sdktest.Case{Name: "rank only", Data: g.Data,
			Params: map[string]string{"rank": "2", "iterations": "2"}, Grant: grant})
	}
}
