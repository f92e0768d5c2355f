package pca

import (
	"context"
	"errors"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/sdk"
)

// From-statistics paths (sdk.StatsEstimator): the estimators built on the
// second moment also run on a rows data set's aggregated statistics — the
// count n and Σ w_i² x_i x_iᵀ with w_i = min(1, clip/‖x_i‖), computed by a
// Beam pipeline (dplr fit --engine beam) — with the same plan, steps and
// guarantee as Fit on the rows with the same public clip, so that the
// ledger records the same run. Only what needs the rows themselves is
// refused: a private clip quantile (clip=auto), a private mean
// (center=private) and the evaluation figures (evaluate=true).

// errStatsEvaluate refuses evaluate=true on statistics.
var errStatsEvaluate = errors.New("evaluate=true needs the rows (its figures are computed from the raw data)")

// statsRowsOptions refuses the row-dependent options shared by the
// clipped estimators.
func statsRowsOptions(c *clipOptions, ctr *centerOptions, ev *evaluation) error {
	if c.Auto() {
		return errors.New("clip=auto needs a private quantile of the row norms, computed from the rows: give a public clip (clip=NUMBER) chosen without looking at the data")
	}
	if ctr.private() {
		return errors.New("center=private needs the rows (the clip applies to the centred rows): use center=none")
	}
	if ctr.scaled() {
		return errors.New("feature_scale=private needs the rows (the rows are divided by the private scales before clipping): use feature_scale=none")
	}
	if ev.Evaluate.Value {
		return errStatsEvaluate
	}
	return nil
}

// statsMoment returns Σ̂ = Moment/n after checking that the statistics
// were clipped to clip (0: unclipped), before any privacy step.
func statsMoment(d *data.Dataset, clip float64) (*mat.SymDense, int, error) {
	if d == nil || d.Stats == nil {
		return nil, 0, errors.New("no statistics in the data set")
	}
	st := d.Stats
	if err := st.Check(); err != nil {
		return nil, 0, err
	}
	if st.Clip != clip {
		if clip == 0 {
			return nil, 0, sdk.BadRequest("the statistics were aggregated from rows clipped to %g; this estimator needs them unclipped", st.Clip)
		}
		return nil, 0, sdk.BadRequest("the statistics were aggregated from rows clipped to %g, not to the requested clip %g", st.Clip, clip)
	}
	sh := mat.NewSymDense(st.P, nil)
	sh.ScaleSym(1/float64(st.N), st.Moment)
	if err := checkGram(sh); err != nil {
		return nil, 0, err
	}
	return sh, st.N, nil
}

// CheckStats implements sdk.StatsEstimator.
func (AnalyzeGauss) CheckStats(opts any) error {
	o := opts.(*analyzeGaussOptions)
	return statsRowsOptions(&o.clipOptions, &o.centerOptions, &o.evaluation)
}

// FitStats implements sdk.StatsEstimator: Analyze Gauss on the clipped
// second moment of the statistics (the clip must be the requested one).
func (AnalyzeGauss) FitStats(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[analyzeGaussOptions](run)
	if err := (AnalyzeGauss{}).CheckStats(o); err != nil {
		return nil, sdk.BadRequest("%w", err)
	}
	sh, n, err := statsMoment(run.Data, o.clipOptions.Value())
	if err != nil {
		return nil, err
	}
	plan, err := analyzeGaussPlan(run.Acct, 0, o)
	if err != nil {
		return nil, err
	}
	res, err := analyzeGauss(ctx, run, plan, sh, n, o.clipOptions.Value(), o)
	if err != nil {
		return nil, err
	}
	(&preprocessed{clip: o.clipOptions.Value()}).report(res)
	return res, nil
}

// CheckStats implements sdk.StatsEstimator: the private mean, the guarded
// stage 2 and the private estimate of σ² and λ need the rows.
func (CXZ) CheckStats(opts any) error {
	o := opts.(*cxzOptions)
	switch {
	case o.private():
		return errors.New("center=private needs the rows: use center=none")
	case o.Guarded:
		return errors.New("guarded clips the rows for stage 2: it needs the rows")
	case o.estimate:
		return errors.New("the private estimate of σ² and λ (sigma2 unset or lambda=auto) needs the rows: give public sigma2 and lambda")
	case o.Evaluate.Value:
		return errStatsEvaluate
	}
	return nil
}

// FitStats implements sdk.StatsEstimator: Algorithm 1 on the second moment
// of the statistics (clipped to clip when it is given, else unclipped).
func (CXZ) FitStats(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[cxzOptions](run)
	if err := (CXZ{}).CheckStats(o); err != nil {
		return nil, sdk.BadRequest("%w", err)
	}
	var clip float64
	if o.CXZClip != nil {
		clip = *o.CXZClip
	}
	sh, n, err := statsMoment(run.Data, clip)
	if err != nil {
		return nil, err
	}
	return fitCXZ(ctx, run, o, nil, sh, n, sh.SymmetricDim())
}

// CheckStats implements sdk.StatsEstimator.
func (Amin) CheckStats(opts any) error {
	o := opts.(*aminOptions)
	return statsRowsOptions(&o.clipOptions, &o.centerOptions, &o.evaluation)
}

// FitStats implements sdk.StatsEstimator: pca-amin on the clipped second
// moment of the statistics, with Fit's plan.
func (Amin) FitStats(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[aminOptions](run)
	if err := (Amin{}).CheckStats(o); err != nil {
		return nil, sdk.BadRequest("%w", err)
	}
	sh, n, err := statsMoment(run.Data, o.clipOptions.Value())
	if err != nil {
		return nil, err
	}
	plan, err := aminPlan(run.Acct, o, sh.SymmetricDim(), 0)
	if err != nil {
		return nil, err
	}
	res, err := aminCovariance(ctx, run, plan.Plan, sh, n, o.clipOptions.Value(), o)
	if err != nil {
		return nil, err
	}
	(&preprocessed{clip: o.clipOptions.Value()}).report(res)
	res.Notes = append(res.Notes, plan.Note(o.Noise.Value))
	return res, nil
}
