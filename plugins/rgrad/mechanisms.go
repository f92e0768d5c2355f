package rgrad

import (
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// The pre-flight declarations of the privacy mechanisms each estimator's
// fit will use (sdk.MechanismDeclarer): every rgrad release — the
// initialisation's and each iteration's — is a Gaussian mechanism, so
// rgrad runs given their model parameters or clips are admitted under the
// Gaussian-DP filter of a budget; the private estimate of those adds one
// exponential-mechanism step (the median of |y_i|).

// gaussianOnly are the uses of every private rgrad fit.
func gaussianOnly() []sdk.MechanismUse {
	return sdk.UsesOf(privacy.Share{Name: "init", Mechanism: privacy.MechGaussian},
		privacy.Share{Name: "iterations", Mechanism: privacy.MechGaussian})
}

// Mechanisms implements sdk.MechanismDeclarer for rgrad-dp and (promoted)
// rgrad-weak: Gaussian releases, and the exponential mechanism of the
// private median of |y_i| when σ1, σr or σ_ξ is left to the estimate.
func (o *modelOptions) Mechanisms(sdk.Shape, privacy.Grant) ([]sdk.MechanismUse, error) {
	return uses(o.tune(), true), nil
}

// Mechanisms implements sdk.MechanismDeclarer for rgrad-strict: Gaussian
// releases, and the exponential mechanism of the private median of |y_i|
// when clip_y or clip is left to the estimate.
func (o *strictOptions) Mechanisms(sdk.Shape, privacy.Grant) ([]sdk.MechanismUse, error) {
	return uses(o.tune(), false), nil
}

// uses are the uses of a private fit: Gaussian releases only, or with the
// estimate's shares when tune is set (moment: rgrad-dp's clipped moment
// matrix too).
func uses(tune, moment bool) []sdk.MechanismUse {
	if !tune {
		return gaussianOnly()
	}
	return append(sdk.UsesOf(tuneShares(1, moment)...), gaussianOnly()...)
}
