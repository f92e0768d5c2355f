// Command dplr-leaky is a deliberately broken test plugin for dplr audit:
// its leaky-mean estimator releases the mean of clipped rows with noise
// calibrated to a fifth of the true sensitivity (2·clip/n), so its noise
// is 5× too small for the guarantee it states. The host cannot see this
// (the declared step is self-consistent); an empirical audit must.
package main

import (
	"context"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/engine/transport"
)

type leakyOptions struct {
	sdk.Clip `default:"1"`
}

// Plan implements sdk.Planner: the whole grant on the Gaussian mean.
func (o *leakyOptions) Plan(sdk.Shape, privacy.Grant) (sdk.PlanSpec, error) {
	return sdk.PlanSpec{Noise: privacy.NoiseZCDP, Shares: []privacy.Share{{Name: "mean", Weight: 1, Mechanism: privacy.MechGaussian}}}, nil
}

type leaky struct{}

func (leaky) Info() sdk.Info {
	return sdk.Info{
		Name: "leaky-mean", Version: "0.0.1",
		Summary:   "clipped mean with a sensitivity 5× too small (test plugin)",
		DataKind:  data.Rows,
		Guarantee: "claims (ε, δ)-DP; does not have it",
		Grants:    []privacy.GrantKind{privacy.GrantApprox, privacy.GrantZCDP},
		Options:   leakyOptions{},
	}
}

func (leaky) Fit(_ context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[leakyOptions](run)
	b, err := run.Plan.Budget("mean")
	if err != nil {
		return nil, err
	}
	n, p := run.Data.X.Dims()
	mean := make([]float64, p)
	for i := 0; i < n; i++ {
		row := run.Data.X.RawRowView(i)
		norm := 0.0
		for _, v := range row {
			norm += v * v
		}
		s := 1.0
		if norm = math.Sqrt(norm); norm > o.Clip.Value {
			s = o.Clip.Value / norm
		}
		for j, v := range row {
			mean[j] += s * v / float64(n)
		}
	}
	// The bug under test: the true replace-one sensitivity is 2·clip/n.
	rel, err := run.Acct.Gaussian("mean", 2*o.Clip.Value/float64(n)/5, p, b)
	if err != nil {
		return nil, err
	}
	if err := rel.Add(run.Rand, mean); err != nil {
		return nil, err
	}
	res := &sdk.Result{Guarantee: privacy.Guarantee{Neighbours: "one row replaced (n public)"}}
	res.AddMatrix("mean", mat.NewDense(1, p, mean), sdk.Public, "the leaky mean")
	return res, nil
}

func main() { transport.Serve(leaky{}) }
