package orbit

import (
	"context"
	"errors"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/amin"
	rowclip "github.com/dplr/dplr/plugins/internal/clip"
)

// From-statistics paths (sdk.StatsEstimator): every orbit estimator starts
// from A = Σ x̃x̃ᵀ/clip², which is the clipped second moment of a rows data
// set's statistics (data.Statistics, computed by a Beam pipeline for
// `dplr fit --engine beam`) divided by clip². The paths below are the
// estimators' Fit with A taken from the statistics: the same plan, steps
// and guarantee, so the ledger records the same run. clip=auto (a private
// quantile of the row norms) and evaluate=true need the rows and are
// refused before any step; the evaluation-only count of clipped rows is
// not reported.

// checkStatsBase refuses the options that need the rows.
func checkStatsBase(o *base) error {
	if o.Options.Auto() {
		return errors.New("clip=auto needs a private quantile of the row norms, computed from the rows: give a public clip (clip=NUMBER) chosen without looking at the data")
	}
	if o.Evaluate.Value {
		return errors.New("evaluate=true needs the rows (its figures are computed from the raw data)")
	}
	return nil
}

// problemFromStats is newProblem on statistics: A = Moment/clip², after
// checking that the statistics were clipped to the requested clip.
func problemFromStats(run *sdk.Run, o *base) (*problem, error) {
	if err := checkStatsBase(o); err != nil {
		return nil, sdk.BadRequest("%w", err)
	}
	if run.Data == nil || run.Data.Stats == nil {
		return nil, errors.New("no statistics in the data set")
	}
	st := run.Data.Stats
	if err := st.Check(); err != nil {
		return nil, err
	}
	c := o.Options.Value()
	if st.Clip != c {
		return nil, sdk.BadRequest("the statistics were aggregated from rows clipped to %g, not to the requested clip %g", st.Clip, c)
	}
	a := mat.NewSymDense(st.P, nil)
	a.ScaleSym(1/(c*c), st.Moment)
	if err := rowclip.CheckMoment(a, nil); err != nil {
		return nil, err
	}
	pr := &problem{a: a, clip: c}
	var err error
	if pr.gamma, _, err = run.Backend.EigSym(a); err != nil {
		return nil, err
	}
	return pr, nil
}

// CheckStats implements sdk.StatsEstimator.
func (Gauss) CheckStats(opts any) error { return checkStatsBase(&opts.(*gaussOptions).base) }

// FitStats implements sdk.StatsEstimator: Fit with A from the statistics.
func (Gauss) FitStats(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[gaussOptions](run)
	pr, err := problemFromStats(run, &o.base)
	if err != nil {
		return nil, err
	}
	plan, err := newPlan(run, o.noise, &o.base, privacy.Share{Name: shareNoisyA, Weight: 1, Mechanism: privacy.MechGaussian})
	if err != nil {
		return nil, err
	}
	b, err := plan.Budget(shareNoisyA)
	if err != nil {
		return nil, err
	}
	res := &sdk.Result{}
	if err := gaussOrbit(ctx, run, res, pr, o, b); err != nil {
		return nil, err
	}
	res.Guarantee = privacy.Guarantee{Neighbours: neighboursReplace, Assumptions: []string{clipAssumption(pr)}}
	addNote(res, o.note)
	addNote(res, "orbit-gauss is the Analyze Gauss mechanism of pca-analyze-gauss (shared code in plugins/internal/analyzegauss) on A = Σ x̃x̃ᵀ/clip²; pca-analyze-gauss is the maintained entry point (it also centres and releases eigenvalues and the explained-variance ratio) and orbit-gauss may be removed in a later release")
	return res, nil
}

// CheckStats implements sdk.StatsEstimator.
func (EM) CheckStats(opts any) error { return checkStatsBase(&opts.(*emOptions).base) }

// FitStats implements sdk.StatsEstimator: Fit with A from the statistics.
func (EM) FitStats(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[emOptions](run)
	pr, err := problemFromStats(run, &o.base)
	if err != nil {
		return nil, err
	}
	plan, err := newPlan(run, privacy.NoisePure, &o.base, privacy.Share{Name: shareFrame, Weight: 1, Mechanism: privacy.MechExponential})
	if err != nil {
		return nil, err
	}
	b, err := plan.Budget(shareFrame)
	if err != nil {
		return nil, err
	}
	res := &sdk.Result{}
	if err := orbitEM(ctx, run, res, pr, o.lambda, b, &o.emSampling, "orbit frame (exponential mechanism)"); err != nil {
		return nil, err
	}
	if o.cal == CalibPaper && len(o.lambda) == 1 && o.Sampler != SamplerGibbs {
		res.Notes = append(res.Notes, "sensitivity=paper with the exact sampler: the draw is in fact ε/2-DP; the full ε is charged as in the paper")
	}
	addNote(res, o.note)
	return res, nil
}

// CheckStats implements sdk.StatsEstimator.
func (RankK) CheckStats(opts any) error { return checkStatsBase(&opts.(*rankKOptions).base) }

// FitStats implements sdk.StatsEstimator: Fit with A from the statistics.
func (RankK) FitStats(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[rankKOptions](run)
	pr, err := problemFromStats(run, &o.base)
	if err != nil {
		return nil, err
	}
	plan, err := newPlan(run, privacy.NoisePure, &o.base,
		privacy.Share{Name: shareSpectrum, Weight: 0.5, Mechanism: privacy.MechLaplace},
		privacy.Share{Name: shareFrame, Weight: 0.5, Mechanism: privacy.MechExponential})
	if err != nil {
		return nil, err
	}
	res := &sdk.Result{}
	if err := rankKApproximation(ctx, run, res, pr, o.Rank.Value, plan, &o.emSampling); err != nil {
		return nil, err
	}
	addNote(res, o.note)
	return res, nil
}

// CheckStats implements sdk.StatsEstimator.
func (Deflation) CheckStats(opts any) error { return checkStatsBase(&opts.(*deflationOptions).base) }

// FitStats implements sdk.StatsEstimator: Fit with A from the statistics.
func (Deflation) FitStats(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[deflationOptions](run)
	pr, err := problemFromStats(run, &o.base)
	if err != nil {
		return nil, err
	}
	k, d := o.Rank.Value, run.Data.P()
	plan, err := newPlan(run, privacy.NoisePure, &o.base,
		privacy.Share{Name: shareVectors, Weight: 1, Steps: amin.Draws(k, d), Mechanism: privacy.MechExponential})
	if err != nil {
		return nil, err
	}
	b, err := plan.Budget(shareVectors)
	if err != nil {
		return nil, err
	}
	u, diag, beta, err := DeflationSample(ctx, run.Acct, run.Rand, pr.a, k, b, run.Backend)
	if err != nil {
		return nil, err
	}
	res := &sdk.Result{}
	addCommonOutputs(res, pr, u, o.lambda, sdk.Public)
	res.AddScalar("beta", beta, sdk.Public, "inverse temperature of each rank-1 draw, ε/(2k) (ε/(2(d−1)) when k = d: the last vector is determined)")
	res.AddScalar("proposals", float64(diag.Proposals), sdk.Evaluation, "EVALUATION ONLY (depends on the raw data): total ACG proposals")
	res.AddScalar("acceptance_rate", diag.AcceptanceRate, sdk.Evaluation, "EVALUATION ONLY (depends on the raw data): accepted/proposed")
	res.Guarantee = privacy.Guarantee{Neighbours: neighboursReplace, Assumptions: []string{clipAssumption(pr), "the target spectrum Λ is public", exactSamplerCaveat}}
	res.Notes = append(res.Notes, "orbit-deflation runs the same sampler as pca-amin (Amin et al., shared code in plugins/internal/amin) on A = Σ x̃x̃ᵀ/clip²; pca-amin is the maintained entry point (it also centres and releases eigenvalues) and orbit-deflation may be removed in a later release")
	return res, nil
}
