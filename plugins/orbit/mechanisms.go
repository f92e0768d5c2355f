package orbit

import (
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/amin"
)

// The plans of the estimators (sdk.Planner), from which the SDK declares
// their mechanisms and checks them against the grant before anything is
// reserved; base.spec adds the clip=auto quantile.

// Plan implements sdk.Planner: the orbit exponential mechanism.
func (o *emOptions) Plan(s sdk.Shape, g privacy.Grant) (sdk.PlanSpec, error) {
	return o.base.spec(s, g, o.Noise.Value, true, privacy.Share{Name: shareFrame, Weight: 1, Mechanism: privacy.MechExponential}), nil
}

// Plan implements sdk.Planner: Laplace eigenvalues, then the orbit
// exponential mechanism, half of ε each.
func (o *rankKOptions) Plan(s sdk.Shape, g privacy.Grant) (sdk.PlanSpec, error) {
	return o.base.spec(s, g, o.Noise.Value, true,
		privacy.Share{Name: shareSpectrum, Weight: 0.5, Mechanism: privacy.MechLaplace},
		privacy.Share{Name: shareFrame, Weight: 0.5, Mechanism: privacy.MechExponential}), nil
}

// Plan implements sdk.Planner: the exponential mechanism for each deflated
// vector.
func (o *deflationOptions) Plan(s sdk.Shape, g privacy.Grant) (sdk.PlanSpec, error) {
	return o.base.spec(s, g, o.Noise.Value, true,
		privacy.Share{Name: shareVectors, Weight: 1, Steps: amin.Draws(o.Rank.Value, s.P), Mechanism: privacy.MechExponential}), nil
}

// Plan implements sdk.Planner: Gaussian noise on A.
func (o *gaussOptions) Plan(s sdk.Shape, g privacy.Grant) (sdk.PlanSpec, error) {
	return o.base.spec(s, g, o.Noise.Value, false, privacy.Share{Name: shareNoisyA, Weight: 1, Mechanism: privacy.MechGaussian}), nil
}
