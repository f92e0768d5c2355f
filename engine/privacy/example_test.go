package privacy_test

import (
	"fmt"

	"github.com/dplr/dplr/engine/privacy"
)

// The same (ε, δ) guarantee for k Gaussian releases of sensitivity 1 costs
// different noise depending on the calibration: the classical mechanism at
// (ε/k, δ/k) with basic composition (what papers do), zCDP with the simple
// conversion, and zCDP with the tight conversion (dplr's default).
// (Grid allowances, ~1e-9 relative, are left out.)
func ExampleRhoForEpsDelta() {
	eps, delta := 1.0, 1e-6
	for _, k := range []int{1, 4, 16} {
		part, _ := privacy.SplitEpsDelta(eps, delta, k)
		classical, _ := privacy.ClassicalGaussianSigma(1, part.Epsilon, part.Delta)
		analytic, _ := privacy.AnalyticGaussianSigma(1, part.Epsilon, part.Delta)
		rs, _ := privacy.RhoForEpsDeltaSimple(eps, delta)
		rt, _ := privacy.RhoForEpsDelta(eps, delta)
		simple, _ := privacy.GaussianSigmaForRho(1, rs/float64(k))
		tight, _ := privacy.GaussianSigmaForRho(1, rt/float64(k))
		fmt.Printf("k=%2d  σ: classical+basic %.3f  analytic+basic %.3f  zCDP simple %.3f  zCDP tight %.3f\n", k, classical, analytic, simple, tight)
	}
	// Output:
	// k= 1  σ: classical+basic 5.299  analytic+basic 4.225  zCDP simple 5.350  zCDP tight 4.531
	// k= 4  σ: classical+basic 22.217  analytic+basic 16.594  zCDP simple 10.700  zCDP tight 9.062
	// k=16  σ: classical+basic 92.776  analytic+basic 66.065  zCDP simple 21.400  zCDP tight 18.124
}
