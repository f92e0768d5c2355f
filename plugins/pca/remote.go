package pca

import (
	"errors"

	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/rowsrc"
)

// Remote paths (sdk.RemoteEstimator): pca-analyze-gauss, pca-amin and
// pca-cxz also run on a rows data set held elsewhere (shards a Beam
// pipeline reads, dplr fit --engine beam), reaching it only through
// aggregation passes (package engine/pass): the counts of the row norms on
// the public quantile grid for clip=auto (and for the mean's automatic
// clip), the clipped sum for center=private, and the clipped second moment
// about the released mean. The fit is the same code as on local rows (Fit
// reads the rows through a rowsrc.Source), so its plan, steps and releases
// are those of the fit on the rows the passes aggregate; with the same seed
// the release equals the local one up to floating-point summation order
// (DERIVATIONS.md §11). evaluate=true reads the unclipped mean and second
// moment of the rows (one pass of kind rows.moment with clip 0; the figures
// are evaluation-only, never private). Refused before any budget is
// reserved: feature_scale=private, whose scales pair rows by their
// position in the file.

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
	kinds := rowsrc.Kinds(newPrepPlan(0, c, ctr).quantiles > 0, ctr.private())
	if ev.Evaluate.Value {
		kinds = append(kinds, pass.RowsMoment)
	}
	return kinds, nil
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
	kinds := rowsrc.Kinds(o.estimate && o.CXZClip == nil || o.meanAuto(), o.private())
	if o.Evaluate.Value {
		kinds = append(kinds, pass.RowsMoment)
	}
	return kinds, nil
}

// Passes implements sdk.RemoteEstimator: the non-private reference reads
// the (optionally clipped) second moment and, with center=empirical, the
// plain sum of the rows (rows.clipped_sum with clip 0).
func (NonPrivate) Passes(opts any, _ sdk.Shape) ([]string, error) {
	o := opts.(*nonPrivateOptions)
	kinds := rowsrc.Kinds(false, o.Center == "empirical")
	if o.Evaluate.Value {
		kinds = append(kinds, pass.RowsMoment)
	}
	return kinds, nil
}
