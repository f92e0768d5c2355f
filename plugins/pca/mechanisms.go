package pca

import (
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// The pre-flight declarations of the privacy mechanisms each estimator's
// fit will use (sdk.MechanismDeclarer), derived from the plan shares the
// fits build.

// Mechanisms implements sdk.MechanismDeclarer: Gaussian noise on the second
// moment (and on the mean with center=private), and the exponential
// mechanism for each private norm quantile (clip=auto, or a mean clip
// chosen privately).
func (o *analyzeGaussOptions) Mechanisms(s sdk.Shape, g privacy.Grant) ([]sdk.MechanismUse, error) {
	if err := o.checkScalesLocatable(s, g, func(a *privacy.Accountant) (*privacy.Plan, error) { return analyzeGaussPlan(a, s.P, o) }); err != nil {
		return nil, err
	}
	return withClipAuto(sdk.UsesOf(analyzeGaussShares(s.P, o)...), o.Auto()), nil
}

// Mechanisms implements sdk.MechanismDeclarer: the exponential mechanism
// for the eigenvectors (and any private norm quantile), the Laplace
// mechanism for the eigenvalues (eigenvalue_share > 0) and for the mean
// (center=private).
func (o *aminOptions) Mechanisms(s sdk.Shape, g privacy.Grant) ([]sdk.MechanismUse, error) {
	plan := func(a *privacy.Accountant) (*privacy.Plan, error) {
		pp, err := aminPlan(a, o, s.P)
		if err != nil {
			return nil, err
		}
		return pp.Plan, nil
	}
	if err := o.checkScalesLocatable(s, g, plan); err != nil {
		return nil, err
	}
	return withClipAuto(sdk.UsesOf(aminShares(o, s.P)...), o.Auto()), nil
}

// Mechanisms implements sdk.MechanismDeclarer: Gaussian noise on the
// projector (stage 1), on the compressed covariance (stage 2, unless
// pca_only) and on the mean (center=private); with the private model
// estimate (σ² or λ unset), Gaussian noise on its trace, spectrum and
// inner statistics and, without a given clip, an exponential-mechanism
// norm quantile; with sensitivity=worst-case, a Laplace test (refused
// before any spend under a grant that is not (ε, δ)).
func (o *cxzOptions) Mechanisms(s sdk.Shape, g privacy.Grant) ([]sdk.MechanismUse, error) {
	return o.config(g, s.N, s.P).uses(g)
}

// withClipAuto names the option behind a private norm quantile, so that a
// refusal tells the user what to change.
func withClipAuto(uses []sdk.MechanismUse, auto bool) []sdk.MechanismUse {
	for i, u := range uses {
		if u.For == shareClip && auto {
			uses[i].For = "private norm quantile (clip=auto)"
		}
	}
	return uses
}
