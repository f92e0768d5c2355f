package orbit

import (
	"context"
	"errors"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/sdk"
)

// From-statistics paths (sdk.StatsEstimator): every orbit estimator starts
// from A = Σ x̃x̃ᵀ/clip², which is the clipped second moment of a rows data
// set's statistics (data.Statistics, computed by a Beam pipeline for
// `dplr fit --engine beam`) divided by clip². FitStats runs the
// estimator's own Fit, whose problemFor takes A from the statistics
// (problemFromStats): the same plan, steps and guarantee, so the ledger
// records the same run. clip=auto (a private quantile of the row norms)
// and evaluate=true need the rows and are refused before any step; the
// evaluation-only count of clipped rows is not in the statistics and is
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
	pr := &problem{a: a, clip: c}
	var err error
	if pr.gamma, _, err = run.Backend.EigSym(a); err != nil {
		return nil, err
	}
	return pr, nil
}

// fitStats runs fit on statistics and drops the clipped-rows count, which
// statistics do not carry (problemFromStats leaves it 0).
func fitStats(ctx context.Context, run *sdk.Run, fit func(context.Context, *sdk.Run) (*sdk.Result, error)) (*sdk.Result, error) {
	if run.Data == nil || run.Data.Stats == nil {
		return nil, errors.New("no statistics in the data set")
	}
	res, err := fit(ctx, run)
	if err != nil {
		return nil, err
	}
	res.Scalars = slices.DeleteFunc(res.Scalars, func(s sdk.Scalar) bool { return s.Name == "clipped_rows" })
	return res, nil
}

// CheckStats implements sdk.StatsEstimator.
func (Gauss) CheckStats(opts any) error { return checkStatsBase(&opts.(*gaussOptions).base) }

// FitStats implements sdk.StatsEstimator.
func (e Gauss) FitStats(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	return fitStats(ctx, run, e.Fit)
}

// CheckStats implements sdk.StatsEstimator.
func (EM) CheckStats(opts any) error { return checkStatsBase(&opts.(*emOptions).base) }

// FitStats implements sdk.StatsEstimator.
func (e EM) FitStats(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	return fitStats(ctx, run, e.Fit)
}

// CheckStats implements sdk.StatsEstimator.
func (RankK) CheckStats(opts any) error { return checkStatsBase(&opts.(*rankKOptions).base) }

// FitStats implements sdk.StatsEstimator.
func (e RankK) FitStats(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	return fitStats(ctx, run, e.Fit)
}

// CheckStats implements sdk.StatsEstimator.
func (Deflation) CheckStats(opts any) error { return checkStatsBase(&opts.(*deflationOptions).base) }

// FitStats implements sdk.StatsEstimator.
func (e Deflation) FitStats(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	return fitStats(ctx, run, e.Fit)
}
