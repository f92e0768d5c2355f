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
		classical, _ := privacy.ClassicalGaussianSigma(1, eps/float64(k), delta/float64(k))
		analytic, _ := privacy.AnalyticGaussianSigma(1, eps/float64(k), delta/float64(k))
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

// A plan splits the grant once, before anything is spent; each release
// declares its step and draws its own noise.
func ExampleNewPlan() {
	acct, _ := privacy.NewAccountant(privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6})
	plan, err := privacy.NewPlan(acct, privacy.NoiseZCDP,
		privacy.Share{Name: "mean", Weight: 0.1},
		privacy.Share{Name: "iteration", Weight: 0.9, Steps: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	src := privacy.NewSeededSource(1)
	b, _ := plan.Budget("mean")
	mean, _ := acct.Gaussian("mean", 0.01, 2, b)
	_ = mean.Add(src, []float64{0.5, -0.25})
	b, _ = plan.Budget("iteration")
	for i := 0; i < 3; i++ {
		step, _ := acct.Gaussian(fmt.Sprintf("iteration %d", i+1), 0.01, 2, b)
		_ = step.Add(src, []float64{0, 0})
	}
	ach := acct.Achieved()
	fmt.Printf("%d steps, within the grant: %v, undrawn: %d\n", len(acct.Steps()), ach.Epsilon <= 1, len(acct.Undrawn()))
	// Output:
	// 4 steps, within the grant: true, undrawn: 0
}
