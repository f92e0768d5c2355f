package meanplugin

import (
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// Plan implements sdk.Planner: the plan of a fit, as data, from the
// options, shape and grant alone. Before it reserves any budget the host
// asks for it; the SDK declares the mechanisms of its shares, checks the
// whole plan against the grant (a plan the grant cannot pay for, or a
// mechanism the data set's budget rule cannot admit, is refused up front:
// under the Gaussian-DP filter only Gaussian steps are admitted), and
// hands the same plan to Fit as run.Plan. A step of a mechanism no share
// names makes the host withhold the result (and the run stays charged).
// The example's one share is the whole grant on the Gaussian mean.
func (o *meanOptions) Plan(sdk.Shape, privacy.Grant) (sdk.PlanSpec, error) {
	return sdk.PlanSpec{Noise: o.Noise.Value, Shares: []privacy.Share{{Name: "mean", Weight: 1, Mechanism: privacy.MechGaussian}}}, nil
}
