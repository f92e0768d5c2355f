package meanplugin

import (
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// Mechanisms implements sdk.MechanismDeclarer: the host asks, before it
// reserves any budget, which privacy mechanisms a fit will use, and refuses
// up front a request the data set's budget rule cannot admit (under the
// Gaussian-DP filter only Gaussian steps are admitted). Declare every
// mechanism the fit may use, from the options, shape and grant alone: a
// step of an undeclared mechanism makes the host withhold the result (and
// the run stays charged). The example's one release is Gaussian; deriving
// the uses from the plan's shares (sdk.UsesOf) keeps the two in step.
func (o *meanOptions) Mechanisms(sdk.Shape, privacy.Grant) ([]sdk.MechanismUse, error) {
	return sdk.UsesOf(meanShare()), nil
}

// meanShare is the plan's one share: the whole grant on the Gaussian mean.
func meanShare() privacy.Share {
	return privacy.Share{Name: "mean", Weight: 1, Mechanism: privacy.MechGaussian}
}
