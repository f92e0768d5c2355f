package orbit

import (
	"math"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/amin"
	"github.com/dplr/dplr/plugins/internal/analyzegauss"
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

// The public screens (sdk.Screener): the near-random half of the pca
// plugin's (sdk.RowsNearRandom, plugins/pca/DERIVATIONS.md §14), so that a
// fit on wide data, whose dry runs are skipped, still warns before it
// spends when no component can stand out. A = Σ x̃x̃ᵀ/clip² is n times the
// clipped second moment at clip 1, so a draw ∝ exp(β⟨A, H⟩) is one
// ∝ exp(β·n·⟨Σ̂, H⟩): like pca-amin's, it finds a spike θ of Σ̂ only when
// β·n·θ exceeds about p/2, an edge of p/(β·n). The first direction's
// weight λ_i/λ_1 is 1, the largest (orbit-rank-k's noisy λ̃_1 only lowers
// β further), so the edge is the smallest any of its directions sees.

// Screen implements sdk.Screener for orbit-em.
func (o *emOptions) Screen(s sdk.Shape, plan *privacy.Plan, g privacy.Grant) (sdk.Screen, error) {
	return frameScreen(s, plan, g, shareFrame, o.Rank.Value, o.cal)
}

// Screen implements sdk.Screener for orbit-rank-k.
func (o *rankKOptions) Screen(s sdk.Shape, plan *privacy.Plan, g privacy.Grant) (sdk.Screen, error) {
	return frameScreen(s, plan, g, shareFrame, o.Rank.Value, o.cal)
}

// Screen implements sdk.Screener for orbit-deflation: each vector's draw
// at its share.
func (o *deflationOptions) Screen(s sdk.Shape, plan *privacy.Plan, g privacy.Grant) (sdk.Screen, error) {
	return frameScreen(s, plan, g, shareVectors, o.Rank.Value, CalibExact)
}

// Screen implements sdk.Screener for orbit-gauss: a symmetric Gaussian E
// of entry deviation σ on A, 2σ√p/n on Σ̂'s scale.
func (o *gaussOptions) Screen(s sdk.Shape, plan *privacy.Plan, g privacy.Grant) (sdk.Screen, error) {
	if s.N < 2 {
		return sdk.Screen{}, nil
	}
	sd, err := sdk.ShareScale(plan, g, shareNoisyA, gaussSensitivity/float64(s.N), analyzegauss.Dim(s.P))
	if err != nil {
		return sdk.Screen{}, err
	}
	return sdk.RowsNearRandom(s.P, o.Rank.Value, 2*sd*math.Sqrt(float64(s.P))), nil
}

// frameScreen is the screen of an exponential-mechanism draw paid from
// share with utility sensitivity 1 on A: β·n = ε·n/2 under the
// worst-case calibration, half that as printed (paper), twice under
// add-remove.
func frameScreen(s sdk.Shape, plan *privacy.Plan, g privacy.Grant, share string, rank int, cal string) (sdk.Screen, error) {
	if s.N < 2 {
		return sdk.Screen{}, nil
	}
	beta, err := sdk.ShareScale(plan, g, share, 1/float64(s.N), 1)
	if err != nil {
		return sdk.Screen{}, err
	}
	switch cal {
	case CalibPaper:
		beta /= 2
	case CalibAddRemove:
		beta *= 2
	}
	return sdk.RowsNearRandom(s.P, rank, float64(s.P)/beta), nil
}
