package orbit

import (
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// The pre-flight declarations of the privacy mechanisms each estimator's
// fit will use (sdk.MechanismDeclarer), from the same shares its plan
// builds (newPlan adds the clip=auto quantile). The host refuses before
// reserving a request the data set's budget rule cannot admit, and the
// conformance suite checks every fit's steps against them.

// uses is sdk.UsesOf of the estimator's shares, with the exponential
// mechanism of the private norm quantile first under clip=auto.
func (o *base) uses(shares ...privacy.Share) []sdk.MechanismUse {
	if o.Options.Auto() {
		shares = append([]privacy.Share{{Name: "private norm quantile (clip=auto)", Mechanism: privacy.MechExponential}}, shares...)
	}
	return sdk.UsesOf(shares...)
}

// Mechanisms implements sdk.MechanismDeclarer: the orbit exponential
// mechanism (and the clip=auto quantile).
func (o *emOptions) Mechanisms(sdk.Shape, privacy.Grant) ([]sdk.MechanismUse, error) {
	return o.base.uses(privacy.Share{Name: shareFrame, Mechanism: privacy.MechExponential}), nil
}

// Mechanisms implements sdk.MechanismDeclarer: Laplace eigenvalues, then
// the orbit exponential mechanism (and the clip=auto quantile).
func (o *rankKOptions) Mechanisms(sdk.Shape, privacy.Grant) ([]sdk.MechanismUse, error) {
	return o.base.uses(privacy.Share{Name: shareSpectrum, Mechanism: privacy.MechLaplace},
		privacy.Share{Name: shareFrame, Mechanism: privacy.MechExponential}), nil
}

// Mechanisms implements sdk.MechanismDeclarer: the exponential mechanism
// for each deflated vector (and the clip=auto quantile).
func (o *deflationOptions) Mechanisms(sdk.Shape, privacy.Grant) ([]sdk.MechanismUse, error) {
	return o.base.uses(privacy.Share{Name: shareVectors, Mechanism: privacy.MechExponential}), nil
}

// Mechanisms implements sdk.MechanismDeclarer: Gaussian noise on A (and
// the clip=auto quantile).
func (o *gaussOptions) Mechanisms(sdk.Shape, privacy.Grant) ([]sdk.MechanismUse, error) {
	return o.base.uses(privacy.Share{Name: shareNoisyA, Mechanism: privacy.MechGaussian}), nil
}
