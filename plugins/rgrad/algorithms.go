package rgrad

import (
	"context"
	"fmt"
	"math"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// fitEnv is what every algorithm of this package works on: the run, the
// backend, the validated configuration, the aggregation passes over the
// samples and the result being filled.
type fitEnv struct {
	ctx          context.Context
	run          *sdk.Run
	be           backend.Backend
	cfg          fitOptions
	pass         passes
	n, d1, d2, r int
	res          *sdk.Result
	// estimated is set when some model parameter was privately estimated.
	estimated bool
}

// fit runs the algorithm of cfg.mode (DERIVATIONS.md §2) on the run's
// data with the backend be.
func fit(ctx context.Context, run *sdk.Run, be backend.Backend, cfg fitOptions) (*sdk.Result, error) {
	d := run.Data
	e := &fitEnv{ctx: ctx, run: run, be: be, cfg: cfg, pass: newPasses(d),
		n: d.N(), d1: d.D1, d2: d.D2, r: cfg.common.Rank.Value, res: &sdk.Result{}}
	run.Logf("rgrad %s: n=%d, d1=%d, d2=%d, r=%d, T=%d, η=%g, %s", cfg.mode, e.n, e.d1, e.d2, e.r, cfg.iterations, cfg.step(), cfg.design)
	if d.Remote != nil {
		run.Logf("rgrad: the samples are read through %d aggregation passes (1 + T)", 1+cfg.iterations)
	}
	var err error
	switch cfg.mode {
	case NonPrivate:
		err = nonPrivateRGrad(e)
	case Strict:
		err = strictDPRGrad(e)
	default:
		err = modelDPRGrad(e)
	}
	if err != nil {
		return nil, err
	}
	return e.res, nil
}

// nonPrivateRGrad is the ε = ∞ reference (DERIVATIONS.md §2.1, §2.3): the
// rank-r SVD of L̂ starts Riemannian gradient descent without clipping or
// noise.
func nonPrivateRGrad(e *fitEnv) error {
	lhat, err := e.moment()
	if err != nil {
		return err
	}
	start, err := spectralInit(e, lhat)
	if err != nil {
		return err
	}
	tr, err := riemannianGradient(e, start, iterationRule{})
	if err != nil {
		return err
	}
	e.reportEstimate(start, tr, sdk.Evaluation)
	e.nonPrivateGuarantee()
	return nil
}

// modelDPRGrad is rgrad-dp and rgrad-weak (DERIVATIONS.md §2.4, §2.5): the
// private spectral initialisation with the model sensitivities, then T
// clipped DP-RGrad iterations with τ chosen from the public model
// parameters; init_share of the budget goes to the 3 initialisation
// releases and the rest to the iterations, composed as noise= says (§3).
func modelDPRGrad(e *fitEnv) error {
	o := e.cfg.model
	_, noise := o.calibration()
	plan, bInit, bIter, err := e.budgets()
	if err != nil {
		return err
	}
	worstSubspace := false
	if o.tune() {
		est, err := e.tuneModel(plan)
		if err != nil {
			return err
		}
		worstSubspace = o.resolve(est, e.res)
		e.estimated = true
		e.run.Logf("rgrad: estimated σ1=%.4g σr=%.4g σ_ξ=%.4g (response scale %.4g)", *o.Sigma1, *o.SigmaR, *o.SigmaXi, est.scale)
	}
	sens := ModelSensitivities(o.modelInputs(e.cfg.mode, e.n, e.d1, e.d2, e.cfg.design))
	if worstSubspace {
		// σr was not located (DERIVATIONS.md §10.3, §10.4): the projectors' change
		// is bounded by √(2r) for any data, so no model bound is needed.
		sens.Subspace = math.Sqrt(2 * float64(e.r))
		e.res.AddWarning("the private estimate did not locate σr above its noise: the subspace releases use the worst-case projector sensitivity √(2r) (any data), so the initialisation is mostly noise and the gradient iterations do the work; give sigmar or raise tune_share or ε for a sharper start (DERIVATIONS.md §10.3)")
	}
	e.reportSensitivities(sens)
	if noise == privacy.NoiseZCDP || noise == privacy.NoiseExact {
		e.reportBasicComposition(sens, bInit, bIter)
	}
	lhat, err := e.moment()
	if err != nil {
		return err
	}
	start, err := privateSpectralInit(e, lhat, sens, bInit)
	if err != nil {
		return err
	}
	tr, err := riemannianGradient(e, start, iterationRule{clip: sens.Clip, sens: sens.Iter, budget: &bIter})
	if err != nil {
		return err
	}
	e.reportEstimate(start, tr, sdk.Public)
	e.reportIterationNoise(sens, tr)
	e.modelGuarantee(sens)
	return nil
}

// strictDPRGrad is rgrad-strict (DERIVATIONS.md §2.6): the clipped moment
// matrix L̂ released whole by the Gaussian mechanism, its rank-r SVD with
// soft-thresholded singular values as the start, then T clipped DP-RGrad
// iterations with the public clip τ = clip; worst-case, composed exactly as
// Gaussian DP (noise=exact, the default) or in zCDP (noise=zcdp).
func strictDPRGrad(e *fitEnv) error {
	o := e.cfg.strict
	plan, bInit, bIter, err := e.budgets()
	if err != nil {
		return err
	}
	var sy float64
	if o.tune() {
		b, err := plan.Budget(shareTuneQuantile)
		if err != nil {
			return fmt.Errorf("rgrad: %w", err)
		}
		if sy, err = e.responseScale(b); err != nil {
			return err
		}
		if o.ClipY == nil {
			o.ClipY = new(tuneClipY * sy)
		}
	}
	start, top, sigmaInit, err := clippedMomentInit(e, *o.ClipY, bInit)
	if err != nil {
		return err
	}
	if o.tune() {
		est := e.spikes(top, sigmaInit, *o.ClipY, sy)
		if o.Tau == nil {
			o.Tau = new(strictClip(est.sigmaXi, est.sigmaR, e.n, e.d1, e.d2, e.r))
		}
		est.report(e.res)
		e.res.AddScalar("clip_y", *o.ClipY, sdk.Public, "bound on |y_i| used by the initialisation (given, or 2·ŝ_y)")
		e.run.Logf("rgrad: clip_y=%.4g, clip=%.4g from the private estimate (σr≈%.4g, σ_ξ≈%.4g)", *o.ClipY, *o.Tau, est.sigmaR, est.sigmaXi)
	}
	sens := Sensitivities{Clip: *o.Tau, Iter: e.cfg.step() * kernel.ProjectedGradientSensitivity(*o.Tau) / float64(e.n)}
	tr, err := riemannianGradient(e, start, iterationRule{clip: sens.Clip, sens: sens.Iter, budget: &bIter})
	if err != nil {
		return err
	}
	e.reportEstimate(start, tr, sdk.Public)
	e.reportIterationNoise(sens, tr)
	e.strictGuarantee()
	return nil
}

// tuneModel releases the private estimate of the model parameters from
// the plan's tune shares (DERIVATIONS.md §10).
func (e *fitEnv) tuneModel(plan *privacy.Plan) (estimate, error) {
	bq, err := plan.Budget(shareTuneQuantile)
	if err != nil {
		return estimate{}, fmt.Errorf("rgrad: %w", err)
	}
	bm, err := plan.Budget(shareTuneMoment)
	if err != nil {
		return estimate{}, fmt.Errorf("rgrad: %w", err)
	}
	return e.estimateModel(bq, bm)
}

// planSpec is the plan of a private fit with T iterations: with tune, the
// private estimate's shares (tuneShares, tune_share of the budget;
// moment: with the moment matrix), then initShare of the rest over
// initSteps initialisation releases and the rest over the iterations, all
// Gaussian but the estimate's quantile.
func planSpec(noise string, tune bool, tuneShare float64, moment bool, initShare float64, initSteps, T int) sdk.PlanSpec {
	rest := 1.0
	var shares []privacy.Share
	if tune {
		shares = tuneShares(tuneShare, moment)
		rest -= tuneShare
	}
	return sdk.PlanSpec{Noise: noise, Shares: append(shares,
		privacy.Share{Name: "init", Weight: rest * initShare, Steps: initSteps, Mechanism: privacy.MechGaussian},
		privacy.Share{Name: "iterations", Weight: rest * (1 - initShare), Steps: T, Mechanism: privacy.MechGaussian})}
}

// budgets returns the run's plan and the per-step budgets of the
// initialisation and the iterations.
func (e *fitEnv) budgets() (plan *privacy.Plan, bInit, bIter privacy.Budget, err error) {
	plan = e.run.Plan
	if bInit, err = plan.Budget("init"); err == nil {
		bIter, err = plan.Budget("iterations")
	}
	if err != nil {
		return nil, bInit, bIter, fmt.Errorf("rgrad: %w", err)
	}
	return plan, bInit, bIter, nil
}
