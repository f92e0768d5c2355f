package pca

import (
	"errors"

	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/rowsrc"
)

// Remote paths (sdk.RemoteEstimator): the estimators also fit a rows data
// set held elsewhere through aggregation passes, with the same code, plan
// and steps as on local rows (DERIVATIONS.md §11). feature_scale=private
// and center=pairs need the rows and are refused before any reservation.

// errRemoteScale refuses feature_scale=private on a remote data set.
var errRemoteScale = errors.New("feature_scale=private pairs rows by their position in the data, which aggregation passes do not see: use feature_scale=none")

// errRemotePairs refuses center=pairs on a remote data set.
var errRemotePairs = errors.New("center=pairs draws pairs of rows, which aggregation passes do not serve: fit the file locally, or use center=private")

// remotePasses returns the pass kinds of a clipped estimator's fit with
// these options on a remote data set, or refuses the options that need
// the rows.
func remotePasses(c *clipOptions, ctr *centerOptions, ev *evaluation) ([]string, error) {
	if ctr.scaled() {
		return nil, errRemoteScale
	}
	if ctr.pairs() {
		return nil, errRemotePairs
	}
	return ev.passes(rowsrc.Kinds(newPrepPlan(0, c, ctr).quantiles > 0, ctr.private())), nil
}

// passes adds evaluate=true's pass (the unclipped moment, rows.moment) to
// kinds.
func (e *evaluation) passes(kinds []string) []string {
	if e.Evaluate.Value {
		return append(kinds, pass.RowsMoment)
	}
	return kinds
}

// Passes implements sdk.RemoteEstimator.
func (AnalyzeGauss) Passes(opts any, _ sdk.Shape) ([]string, error) {
	o := opts.(*analyzeGaussOptions)
	return remotePasses(&o.clipOptions, &o.centerOptions, &o.evaluation)
}

// Passes implements sdk.RemoteEstimator.
func (Amin) Passes(opts any, _ sdk.Shape) ([]string, error) {
	o := opts.(*aminOptions)
	return remotePasses(&o.clipOptions, &o.centerOptions, &o.evaluation)
}

// Passes implements sdk.RemoteEstimator: pca-cxz reads the clipped second
// moment (also at the guard's bound √τ with guarded=true), the clipped sum
// for center=private and, for the private estimate of σ² and λ without a
// clip or for mean_clip=auto, the norm counts of a quantile.
func (CXZ) Passes(opts any, _ sdk.Shape) ([]string, error) {
	o := opts.(*cxzOptions)
	return o.passes(rowsrc.Kinds(o.estimate && o.CXZClip == nil || o.meanAuto(), o.private())), nil
}

// Passes implements sdk.RemoteEstimator: the non-private reference reads
// the (optionally clipped) second moment and, with center=empirical, the
// plain sum of the rows (rows.clipped_sum with clip 0).
func (NonPrivate) Passes(opts any, _ sdk.Shape) ([]string, error) {
	o := opts.(*nonPrivateOptions)
	return o.passes(rowsrc.Kinds(false, o.Center == "empirical")), nil
}
