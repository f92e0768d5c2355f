// Package meanplugin is the smallest complete dplr estimator: the mean of
// rows clipped to a public ℓ2 norm, released with Gaussian noise. It is the
// template for third-party plugins (see docs/plugins.md) and is built and run
// through the host by the tests.
package meanplugin

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// Mean is the clipped-mean estimator.
type Mean struct{}

// Estimators lists what the example plugin serves.
func Estimators() []sdk.Estimator { return []sdk.Estimator{Mean{}, RawMean{}} }

// RawMean is the non-private reference: the plain mean of the rows. It
// shows how a plugin marks a reference estimator (Info.NonPrivate).
type RawMean struct{}

// Info implements sdk.Estimator.
func (RawMean) Info() sdk.Info {
	return sdk.Info{
		Name: "example-mean-nonprivate", Version: "0.1.0",
		Summary:    "plain mean of the rows (NON-PRIVATE reference)",
		DataKind:   data.Rows,
		Guarantee:  "none: non-private reference output",
		Grants:     []privacy.GrantKind{privacy.GrantApprox, privacy.GrantZCDP, privacy.GrantPure},
		NonPrivate: true,
	}
}

// Passes implements sdk.RemoteEstimator: the plain sum is one pass.
func (RawMean) Passes(any, sdk.Shape) ([]string, error) { return []string{pass.RowsClippedSum}, nil }

// Fit implements sdk.Estimator.
func (RawMean) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	mean, err := clippedMean(ctx, run, 0)
	if err != nil {
		return nil, err
	}
	res := &sdk.Result{Guarantee: privacy.Guarantee{Kind: privacy.None}}
	res.AddMatrix("mean", mat.NewDense(1, len(mean), mean), sdk.Public, "mean of the rows (not private)")
	return res, nil
}

// meanOptions are Mean's parameters: the shared clip (with a default of 1)
// and the shared noise calibration. The SDK derives the catalogue from the
// tags and binds every request before Fit.
type meanOptions struct {
	sdk.Clip  `default:"1"`
	sdk.Noise `default:"exact"`
}

// Info implements sdk.Estimator.
func (Mean) Info() sdk.Info {
	return sdk.Info{
		Name:    "example-mean",
		Version: "0.1.0",
		Summary: "mean of rows clipped to a public norm, Gaussian mechanism (template plugin)",
		Description: "Each row is scaled down to ℓ2 norm at most `clip`; the mean of the clipped rows then has " +
			"ℓ2 sensitivity 2·clip/n under replacement of one row, and is released with Gaussian noise " +
			"calibrated from the whole grant through the exact Gaussian curve by default (noise=exact: the least noise " +
			"any valid accounting allows; noise=zcdp, classical, analytic for comparison). n is treated as public.",
		DataKind:   data.Rows,
		Guarantee:  "worst-case (ε, δ)-DP / ρ-zCDP, neighbours differ by one replaced row (n public)",
		Grants:     []privacy.GrantKind{privacy.GrantApprox, privacy.GrantZCDP},
		Options:    meanOptions{},
		References: []string{"Dwork & Roth (2014), The Algorithmic Foundations of Differential Privacy, §3.5"},
	}
}

// Fit implements sdk.Estimator.
func (Mean) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[meanOptions](run)
	// The SDK planned the whole budget before Fit (see Plan): read the
	// release's budget from it.
	budget, err := run.Plan.Budget("mean")
	if err != nil {
		return nil, err
	}
	n := run.Data.N()
	mean, err := clippedMean(ctx, run, o.Clip.Value)
	if err != nil {
		return nil, err
	}
	// Declare the step; the release owns σ and the grid and draws the noise.
	rel, err := run.Acct.Gaussian("mean", kernel.SumSensitivity(o.Clip.Value)/float64(n), len(mean), budget)
	if err != nil {
		return nil, fmt.Errorf("declaring the mean's privacy step: %w", err)
	}
	if err := rel.Add(run.Rand, mean); err != nil {
		return nil, err
	}
	res := &sdk.Result{Guarantee: privacy.Guarantee{Neighbours: "one row replaced (n public)"}}
	res.AddMatrix("mean", mat.NewDense(1, len(mean), mean), sdk.Public, "private mean of the clipped rows (1×p)")
	res.AddScalar("sigma", rel.Scale(), sdk.Public, "standard deviation of the Gaussian noise per coordinate")
	res.Notes = append(res.Notes, "noise="+o.Noise.Value+": the guarantee's figures come from the tightest valid accounting of the release (its accounting field: gdp for the exact Gaussian curve)")
	return res, nil
}

// Passes implements sdk.RemoteEstimator: Fit reads the data only through
// one clipped-sum pass, so it also runs on shards a Beam pipeline reads.
func (Mean) Passes(any, sdk.Shape) ([]string, error) { return []string{pass.RowsClippedSum}, nil }

// clippedMean returns the mean of the rows, each scaled down to ℓ2 norm at
// most clip (0: unclipped), from one rows.clipped_sum pass (in
// process for a data file, through the host's runner for shards).
func clippedMean(ctx context.Context, run *sdk.Run, clip float64) ([]float64, error) {
	res, err := pass.RowsClippedSumKind.Run(ctx, run.Data, pass.ClippedSumRequest{Clip: clip})
	if err != nil {
		return nil, err
	}
	for j := range res.Sum {
		res.Sum[j] /= float64(res.Records)
	}
	return res.Sum, nil
}
