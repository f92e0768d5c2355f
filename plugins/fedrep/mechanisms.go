package fedrep

import (
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// The plans of the private estimators (sdk.Planner), from which the SDK
// declares their mechanisms before anything is reserved. FedRep's private
// clip quantiles are exponential-mechanism steps; the private start and
// every round's mean gradient are Gaussian; a private selection among
// candidate settings adds one exponential-mechanism step;
// fedrep-classify-exact is a single exponential mechanism over a net.

// Plan implements sdk.Planner for fedrep-private.
func (o *privateFedRepOptions) Plan(s sdk.Shape, g privacy.Grant) (sdk.PlanSpec, error) {
	return fedrepSpec(o.config(), s.Users, g)
}

// Plan implements sdk.Planner for fedrep-classify.
func (o *classifyOptions) Plan(s sdk.Shape, g privacy.Grant) (sdk.PlanSpec, error) {
	return fedrepSpec(o.config(), s.Users, g)
}

// Plan implements sdk.Planner for fedrep-classify-exact: the one
// exponential-mechanism step gets the grant's ε for a pure or (ε, δ)
// grant, ε = √(8ρ) for a zCDP grant (an ε-DP exponential mechanism is
// ε²/8-zCDP; DERIVATIONS.md §7).
func (o *exactOptions) Plan(_ sdk.Shape, g privacy.Grant) (sdk.PlanSpec, error) {
	noise := privacy.NoisePure
	if g.Kind == privacy.GrantZCDP {
		noise = privacy.NoiseZCDP
	}
	return sdk.PlanSpec{Noise: noise, Shares: []privacy.Share{{Name: "net", Weight: 1, Mechanism: privacy.MechExponential}}}, nil
}
