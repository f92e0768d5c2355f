package rgrad

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/quantile"
)

// The private estimate of the model parameters (DERIVATIONS.md §10): a
// median of |y_i| released by the exponential mechanism gives the
// response scale s_y, a clipped moment matrix released by the Gaussian
// mechanism gives σ1, …, σr by inverting the spiked-matrix bias of its
// singular values, and σ_ξ² = s_y² − C_l·Σσ_k².
const (
	// tuneQuantile is the level of the released quantile of |y_i|.
	tuneQuantile = 0.5
	// tuneClipY is the clip on |y_i| of the estimate's moment matrix, and
	// rgrad-strict's default clip_y, in units of the response scale ŝ_y.
	tuneClipY = 2.0
	// tuneQuantileWeight is the quantile's part of tune_share in rgrad-dp
	// and rgrad-weak (the clipped moment matrix has the rest).
	tuneQuantileWeight = 0.1
	// tuneXiFloor is the floor of the estimated σ_ξ in units of ŝ_y: the
	// difference s_y² − ‖M‖² cannot resolve a smaller noise level.
	tuneXiFloor = 0.05
)

// Plan share names of the estimate.
const (
	shareTuneQuantile = "tune: median of |y_i|"
	shareTuneMoment   = "tune: clipped moment matrix"
)

// tuneShares are the plan's shares of the estimate: the quantile only
// (rgrad-strict, whose initialisation is the clipped moment release) or
// the quantile and the clipped moment matrix, weight w in all.
func tuneShares(w float64, moment bool) []privacy.Share {
	if !moment {
		return []privacy.Share{{Name: shareTuneQuantile, Weight: w, Steps: 1, Mechanism: privacy.MechExponential}}
	}
	return []privacy.Share{
		{Name: shareTuneQuantile, Weight: w * tuneQuantileWeight, Steps: 1, Mechanism: privacy.MechExponential},
		{Name: shareTuneMoment, Weight: w * (1 - tuneQuantileWeight), Steps: 1, Mechanism: privacy.MechGaussian},
	}
}

// estimate is the released private estimate of the model parameters.
type estimate struct {
	scale                   float64 // ŝ_y
	sigma1, sigmaR, sigmaXi float64
	// resolved is false when the r-th singular value of the release lies
	// at or below the noise's edge: σr is then not located, and σ̂r is the
	// detection threshold.
	resolved bool
}

// tuneGridPerOctave is the resolution of the public grid of the released
// quantile of |y_i| (0.54 % steps): a coarser grid's rounding would
// dominate σ_ξ² = s_y² − ‖M‖² (DERIVATIONS.md §10.2).
const tuneGridPerOctave = 128

// responseScale releases the median of |y_i| on a public geometric grid
// (kernel.GridLow to kernel.GridHigh, tuneGridPerOctave points per octave)
// with the exponential mechanism at budget b (utility sensitivity 1, as
// the private norm quantile of the rows estimators) and returns ŝ_y: the
// released grid point moved to the middle of its cell, over Φ⁻¹(3/4) (the
// standard deviation of a centred normal response with that median).
func (e *fitEnv) responseScale(b privacy.Budget) (float64, error) {
	grid, err := kernel.Grid(kernel.GridLow, kernel.GridHigh, tuneGridPerOctave)
	if err != nil {
		return 0, err
	}
	res, err := pass.TraceResponseCountsKind.Run(e.ctx, e.pass.ds, pass.TraceResponseCountsRequest{Grid: grid})
	if err != nil {
		return 0, fmt.Errorf("rgrad: %w", err)
	}
	counts := make([]int64, len(res.Counts))
	for k, v := range res.Counts {
		counts[k] = int64(v) // integers, checked by pass.CheckResult
	}
	rel, err := e.run.Acct.Exponential(shareTuneQuantile, 1, b)
	if err != nil {
		return 0, err
	}
	var q float64
	err = rel.Sample(func(beta float64) error {
		q, err = quantile.ReleaseCounts(counts, tuneQuantile, grid, beta, e.run.Rand)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("rgrad: %w", err)
	}
	mid := math.Exp2(-0.5 / tuneGridPerOctave)
	return q * mid / distuv.UnitNormal.Quantile(0.5+tuneQuantile/2), nil
}

// spikes estimates σ1 ≥ … ≥ σr of M and σ_ξ from the top r singular
// values s of the released clipped moment matrix (Λ⁻¹ applied, Gaussian
// noise of entry deviation sigmaZ) of samples clipped to |y_i| ≤ cy, and
// the response scale sy (DERIVATIONS.md §10.3): post-processing of
// released values only.
func (e *fitEnv) spikes(s []float64, sigmaZ, cy, sy float64) estimate {
	c := cy / sy
	kappa := 2*distuv.UnitNormal.CDF(c) - 1
	// E[clip(y)²]/s_y² for a centred normal y.
	m2 := kappa - 2*c*distuv.UnitNormal.Prob(c) + 2*c*c*distuv.UnitNormal.Survival(c)
	se := math.Sqrt(sigmaZ*sigmaZ+m2*sy*sy/(e.cfg.design.Cl*float64(e.n))) / kappa
	est := estimate{scale: sy}
	var ss float64
	for k := range s {
		th, ok := spikeInverse(s[k]/kappa, se, e.d1, e.d2)
		est.resolved = ok
		ss += th * th
		if k == 0 {
			est.sigma1 = th
		}
		est.sigmaR = th
	}
	est.sigmaXi = math.Max(math.Sqrt(math.Max(sy*sy-e.cfg.design.Cl*ss, 0)), tuneXiFloor*sy)
	return est
}

// spikeInverse returns the singular value θ of a rank-one signal whose
// observed singular value in additive noise of entry deviation se on a
// d1×d2 matrix is s: the solution of s² = (θ² + se²d1)(θ² + se²d2)/θ²
// (Benaych-Georges and Nadakuditi 2012). Below the noise's edge
// se(√d1 + √d2) no signal is identifiable, and the detection threshold
// se(d1d2)^¼ is returned with ok false.
func spikeInverse(s, se float64, d1, d2 int) (theta float64, ok bool) {
	a, b := se*se*float64(d1), se*se*float64(d2)
	if s <= math.Sqrt(a)+math.Sqrt(b) {
		return math.Sqrt(math.Sqrt(a * b)), false
	}
	u := s*s - a - b
	return math.Sqrt((u + math.Sqrt(math.Max(u*u-4*a*b, 0))) / 2), true
}

// estimateModel releases the estimate of rgrad-dp and rgrad-weak: the
// response scale at bq, then the clipped moment matrix (|y_i| ≤
// tuneClipY·ŝ_y, ‖X_i‖ ≤ the default clip_x) at bm.
func (e *fitEnv) estimateModel(bq, bm privacy.Budget) (estimate, error) {
	sy, err := e.responseScale(bq)
	if err != nil {
		return estimate{}, err
	}
	cy := tuneClipY * sy
	lt, sigmaZ, _, err := e.releaseClippedMoment(shareTuneMoment, defaultClipX(e.cfg.design, e.d1, e.d2), cy, bm)
	if err != nil {
		return estimate{}, err
	}
	_, s, _, err := e.be.SVDTop(lt, e.r)
	if err != nil {
		return estimate{}, fmt.Errorf("rgrad: tune: %w", err)
	}
	return e.spikes(s, sigmaZ, cy, sy), nil
}

// resolve sets every model parameter the user left unset to its estimate
// (σ1 ≥ σr kept when one of them was given) and reports the estimate. It
// returns true when σr was left to an estimate that did not locate it.
func (o *modelOptions) resolve(est estimate, res *sdk.Result) bool {
	unresolved := o.SigmaR == nil && !est.resolved
	set := func(p **float64, v float64) {
		if *p == nil {
			*p = &v
		}
	}
	set(&o.SigmaR, est.sigmaR)
	set(&o.Sigma1, math.Max(est.sigma1, *o.SigmaR))
	if *o.SigmaR > *o.Sigma1 {
		*o.SigmaR = *o.Sigma1
	}
	set(&o.SigmaXi, est.sigmaXi)
	est.report(res)
	return unresolved
}

// report adds the released estimate to res.
func (est estimate) report(res *sdk.Result) {
	res.AddScalar("response_scale", est.scale, sdk.Public, "private response scale ŝ_y: the released median of |y_i| over Φ⁻¹(3/4) (DERIVATIONS.md §10)")
	if est.sigma1 > 0 {
		res.AddScalar("sigma1_estimate", est.sigma1, sdk.Public, "private estimate of σ1 from the released clipped moment matrix (DERIVATIONS.md §10)")
		res.AddScalar("sigmar_estimate", est.sigmaR, sdk.Public, "private estimate of σr from the released clipped moment matrix (DERIVATIONS.md §10)")
		res.AddScalar("sigma_xi_estimate", est.sigmaXi, sdk.Public, "private estimate of σ_ξ: sqrt(ŝ_y² − C_l·Σ σ̂_k²), at least 0.05·ŝ_y (DERIVATIONS.md §10)")
	}
}

// strictClip is rgrad-strict's recommended clip (σ_ξ + σr)·sqrt(r(d1+d2)·ln n)/2
// (DERIVATIONS.md §6).
func strictClip(sigmaXi, sigmaR float64, n, d1, d2, r int) float64 {
	return (sigmaXi + sigmaR) * math.Sqrt(float64(r*(d1+d2))*math.Log(float64(n))) / 2
}
