// Package remotetest is a small estimator that runs on local rows and on a
// data set reached only through aggregation passes (sdk.RemoteEstimator):
// the clipped mean of the rows, from the rows.moment pass, released with
// Gaussian noise. The host's and the command line's tests
// run it through a real plugin process (testdata/dplr-remote).
package remotetest

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// Mean is the clipped-mean estimator "remote-mean".
type Mean struct{}

type options struct {
	sdk.Clip `default:"1"`
	// Passes is how many times the fit asks for the same pass (to test
	// the host's cap on passes).
	Passes int `param:"passes" default:"1" min:"1" doc:"how many times the clipped sum is requested (tests)"`
}

// Plan implements sdk.Planner: the whole grant on the Gaussian mean.
func (o *options) Plan(sdk.Shape, privacy.Grant) (sdk.PlanSpec, error) {
	return sdk.PlanSpec{Noise: privacy.NoiseZCDP, Shares: []privacy.Share{{Name: "mean", Weight: 1, Mechanism: privacy.MechGaussian}}}, nil
}

// Info implements sdk.Estimator.
func (Mean) Info() sdk.Info {
	return sdk.Info{
		Name: "remote-mean", Version: "0.1.0",
		Summary:   "mean of rows clipped to a public norm, from the rows.moment pass (host tests)",
		DataKind:  data.Rows,
		Guarantee: "worst-case ρ-zCDP, neighbours differ by one replaced row (n public)",
		Grants:    []privacy.GrantKind{privacy.GrantApprox, privacy.GrantZCDP},
		Options:   options{},
	}
}

// Passes implements sdk.RemoteEstimator.
func (Mean) Passes(opts any, s sdk.Shape) ([]string, error) {
	return []string{pass.RowsMoment}, nil
}

// Fit implements sdk.Estimator.
func (m Mean) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[options](run)
	passer := pass.Local(run.Data)
	if run.Data.Remote != nil {
		passer = run.Data.Remote.Passer
	}
	sh, q := pass.ShapeOf(run.Data), pass.MomentRequest{Clip: o.Clip.Value}
	var res *data.PassResult
	var err error
	for range o.Passes {
		if res, err = passer.Pass(ctx, pass.RowsMomentKind.EncodeRequest(sh, q)); err != nil {
			return nil, err
		}
	}
	r, err := pass.RowsMomentKind.DecodeResult(sh, &q, res)
	if err != nil {
		return nil, err
	}
	return m.release(run, r)
}

// release releases the mean from the clipped sum.
func (Mean) release(run *sdk.Run, res *pass.MomentResult) (*sdk.Result, error) {
	o := sdk.Opts[options](run)
	budget, err := run.Plan.Budget("mean")
	if err != nil {
		return nil, err
	}
	n, p := run.Data.N(), run.Data.P()
	mean := make([]float64, p)
	for j, v := range res.Sum {
		mean[j] = v / float64(n)
	}
	rel, err := run.Acct.Gaussian("mean", 2*o.Clip.Value/float64(n), p, budget)
	if err != nil {
		return nil, fmt.Errorf("declaring the mean's privacy step: %w", err)
	}
	if err := rel.Add(run.Rand, mean); err != nil {
		return nil, err
	}
	out := &sdk.Result{Guarantee: privacy.Guarantee{Neighbours: "one row replaced (n public)"}}
	out.AddMatrix("mean", mat.NewDense(1, p, mean), sdk.Public, "private mean of the clipped rows (1×p)")
	return out, nil
}
