package rgrad

import (
	"math"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// The plans of the private estimators (sdk.Planner), from which the SDK
// declares their mechanisms before anything is reserved: every rgrad
// release — the initialisation's and each iteration's — is a Gaussian
// mechanism, so rgrad runs given their model parameters or clips are
// admitted under the Gaussian-DP filter of a budget; the private estimate
// of those adds one exponential-mechanism step (the median of |y_i|).

// iterations is T on n samples: the option, or ⌈ln n⌉ when it is 0.
func (o *commonOptions) iterations(n int) int {
	if T := o.Iterations.Value; T != 0 {
		return T
	}
	return int(math.Ceil(math.Log(float64(n))))
}

// Plan implements sdk.Planner for rgrad-dp and (promoted) rgrad-weak: the
// three initialisation releases and the iterations, after the private
// estimate (quantile and moment matrix) when σ1, σr or σ_ξ is left to it.
func (o *modelOptions) Plan(s sdk.Shape, _ privacy.Grant) (sdk.PlanSpec, error) {
	_, noise := o.calibration()
	return planSpec(noise, o.tune(), o.TuneShare, true, o.InitShare, 3, o.iterations(s.N)), nil
}

// Plan implements sdk.Planner for rgrad-strict: the moment matrix and the
// iterations, after the private median of |y_i| when clip_y or clip is
// left to the estimate.
func (o *strictOptions) Plan(s sdk.Shape, _ privacy.Grant) (sdk.PlanSpec, error) {
	noise := o.Noise.Value
	if noise == "" {
		noise = privacy.NoiseExact
	}
	return planSpec(noise, o.tune(), o.TuneShare, false, o.InitShare, 1, o.iterations(s.N)), nil
}
