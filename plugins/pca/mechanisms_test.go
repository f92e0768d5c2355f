package pca

import (
	"testing"

	"github.com/dplr/dplr/engine/sdk/sdktest"
)

// Each estimator declares exactly the mechanisms its fit uses, for the
// options that change them: clip=auto (an exponential-mechanism quantile),
// center=private (a Gaussian or Laplace mean, with a second quantile when
// its clip is private too), eigenvalue_share=0 (no Laplace eigenvalues),
// pca_only (no stage 2).
func TestMechanismsDeclaredExactly(t *testing.T) {
	g := spiked(t, 2000, 12, 2, "24,20", "gaussian", 61)
	cxz := map[string]string{"rank": "2", "sigma2": "1", "lambda": "24,20"}
	ag := map[string]string{"rank": "2", "clip": "12"}
	sdktest.RunDeclared(t, CXZ{},
		sdktest.Case{Name: "explicit", Data: g.Data, Params: cxz, Grant: approx(1, 1e-6)},
		sdktest.Case{Name: "pca only, centred", Data: g.Data, Params: with(cxz, "pca_only", "true", "center", "private", "mean_clip", "15"), Grant: zcdp(0.5)})
	sdktest.RunDeclared(t, AnalyzeGauss{},
		sdktest.Case{Name: "fixed clip (Gaussian only)", Data: g.Data, Params: ag, Grant: approx(1, 1e-6)},
		sdktest.Case{Name: "clip=auto", Data: g.Data, Params: with(ag, "clip", "auto"), Grant: approx(1, 1e-6)},
		sdktest.Case{Name: "clip=auto, centred", Data: g.Data, Params: with(ag, "clip", "auto", "center", "private"), Grant: approx(1, 1e-6)},
		sdktest.Case{Name: "exact, centred", Data: g.Data, Params: with(ag, "noise", "exact", "center", "private"), Grant: approx(1, 1e-6)})
	sdktest.RunDeclared(t, Amin{},
		sdktest.Case{Name: "pure", Data: g.Data, Params: ag, Grant: pure(1)},
		sdktest.Case{Name: "no eigenvalues", Data: g.Data, Params: with(ag, "eigenvalue_share", "0"), Grant: pure(1)},
		sdktest.Case{Name: "clip=auto, centred", Data: g.Data, Params: with(ag, "clip", "auto", "center", "private"), Grant: approx(1, 1e-6)})
}
