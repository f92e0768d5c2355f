package sdk

import "context"

// StatsEstimator is implemented by a rows estimator that can also run on
// the rows' aggregated statistics (data.Statistics: the count, the clipped
// sum and the clipped second moment), computed elsewhere — by a Beam
// pipeline over data too large for one machine — and validated by the
// host. Its plans, privacy steps and guarantee are those of Fit on the
// rows the statistics aggregate, so the ledger sees the same run.
//
// InfoOf marks such an estimator in the catalogue (Info.Statistics), and
// RunLocal calls FitStats instead of Fit when the data set holds
// statistics. An estimator without this interface is refused statistics
// before any budget is reserved.
type StatsEstimator interface {
	Estimator
	// CheckStats refuses, before any budget is reserved, a request the
	// estimator cannot serve from statistics alone (options that need the
	// rows, such as a private clip quantile or a private mean). opts is
	// the bound options value, as Opts returns it.
	CheckStats(opts any) error
	// FitStats runs the estimator on run.Data.Stats (run.Data.X is nil).
	// It must check that the statistics were clipped as its guarantee
	// needs before any privacy step.
	FitStats(ctx context.Context, run *Run) (*Result, error)
}

// CheckStatistics is the pre-flight check of a request on statistics: est
// must implement StatsEstimator and accept the bound options opts. Its
// errors are BadRequests.
func CheckStatistics(est Estimator, opts any) error {
	_, err := statsFit(est, opts)
	return err
}

// statsFit returns est's FitStats after checking the request.
func statsFit(est Estimator, opts any) (func(context.Context, *Run) (*Result, error), error) {
	se, ok := est.(StatsEstimator)
	if !ok {
		return nil, BadRequest("estimator %s needs the rows: it has no path from aggregated statistics (run it on the data file, not through Beam)", est.Info().Name)
	}
	if err := se.CheckStats(opts); err != nil {
		return nil, BadRequest("estimator %s on statistics: %w", est.Info().Name, err)
	}
	return se.FitStats, nil
}
