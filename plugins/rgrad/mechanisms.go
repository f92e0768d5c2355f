package rgrad

import (
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// The pre-flight declarations of the privacy mechanisms each estimator's
// fit will use (sdk.MechanismDeclarer): every rgrad release — the
// initialisation's and each iteration's — is a Gaussian mechanism, so
// rgrad runs are admitted under the Gaussian-DP filter of a budget.

// gaussianOnly are the uses of every private rgrad fit.
func gaussianOnly() []sdk.MechanismUse {
	return sdk.UsesOf(privacy.Share{Name: "init", Mechanism: privacy.MechGaussian},
		privacy.Share{Name: "iterations", Mechanism: privacy.MechGaussian})
}

// Mechanisms implements sdk.MechanismDeclarer for rgrad-dp and (promoted)
// rgrad-weak: Gaussian releases only.
func (o *modelOptions) Mechanisms(sdk.Shape, privacy.Grant) ([]sdk.MechanismUse, error) {
	return gaussianOnly(), nil
}

// Mechanisms implements sdk.MechanismDeclarer for rgrad-strict: Gaussian
// releases only.
func (o *strictOptions) Mechanisms(sdk.Shape, privacy.Grant) ([]sdk.MechanismUse, error) {
	return gaussianOnly(), nil
}
