package fedrep

import (
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// The pre-flight declarations of the privacy mechanisms each estimator's
// fit will use (sdk.MechanismDeclarer). FedRep's releases — the private
// clip quantiles (noisy histograms), the private start and every round's
// mean gradient — are Gaussian; a private selection among candidate
// settings adds one exponential-mechanism step; fedrep-classify-exact is a
// single exponential mechanism over a net.

// fedrepUses are the uses of a FedRep fit: Gaussian releases (the SDK
// adds the exponential mechanism of a private selection).
func fedrepUses() []sdk.MechanismUse {
	return sdk.UsesOf(privacy.Share{Name: "clip quantiles, start and rounds", Mechanism: privacy.MechGaussian})
}

// Mechanisms implements sdk.MechanismDeclarer for fedrep-private.
func (o *privateFedRepOptions) Mechanisms(sdk.Shape, privacy.Grant) ([]sdk.MechanismUse, error) {
	return fedrepUses(), nil
}

// Mechanisms implements sdk.MechanismDeclarer for fedrep-classify.
func (o *classifyOptions) Mechanisms(sdk.Shape, privacy.Grant) ([]sdk.MechanismUse, error) {
	return fedrepUses(), nil
}

// Mechanisms implements sdk.MechanismDeclarer for fedrep-altmin: the
// private init_clip quantile, the start and the statistics A and b are
// Gaussian releases.
func (o *altminOptions) Mechanisms(sdk.Shape, privacy.Grant) ([]sdk.MechanismUse, error) {
	return sdk.UsesOf(privacy.Share{Name: "init_clip quantile, start and statistics", Mechanism: privacy.MechGaussian}), nil
}

// Mechanisms implements sdk.MechanismDeclarer for fedrep-classify-exact:
// one exponential mechanism over the γ-net.
func (o *exactOptions) Mechanisms(sdk.Shape, privacy.Grant) ([]sdk.MechanismUse, error) {
	return sdk.UsesOf(privacy.Share{Name: "net", Mechanism: privacy.MechExponential}), nil
}
