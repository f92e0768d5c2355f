// Package rgrad is dplr's plugin for differentially private low-rank trace
// regression, after Zha (2024), "Near-optimal differentially private
// low-rank trace regression with guaranteed private initialization"
// (arXiv:2403.15999). Observations are y_i = <X_i, M> + ξ_i with a rank-r
// M ∈ ℝ^{d1×d2}; the estimators return a rank-r estimate of M and its
// factors.
//
// Four estimators share one implementation:
//   - rgrad-dp: private spectral initialisation (Algorithm 1), whose
//     sensitivities hold under the Gaussian design (a model-based
//     guarantee), followed by differentially private Riemannian gradient
//     descent on the rank-r manifold (Algorithm 2) with each sample's
//     projected gradient clipped to a bound chosen from the model's public
//     parameters, so that the iterations hold for any data;
//   - rgrad-weak: the same for weak DP, where only the responses are private;
//   - rgrad-strict: a clipped variant with worst-case (ε, δ)-DP;
//   - rgrad-nonprivate: the non-private reference.
//
// DERIVATIONS.md holds the algorithm boxes and every sensitivity
// derivation. The estimators read the samples only through the trace
// aggregation passes of engine/pass, served in process for a file and by
// Beam for shards, with the same privacy steps either way (§9).
package rgrad

import (
	"context"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// Version of every estimator in this plugin.
const Version = "0.1.0"

var paperRef = "M. Zha (2024), Near-optimal differentially private low-rank trace regression with guaranteed private initialization, arXiv:2403.15999"

var retractionRef = "B. Vandereycken (2013), Low-rank matrix completion by Riemannian optimization, SIAM J. Optim.; K. Wei, J.-F. Cai, T. F. Chan, S. Leung (2016), Guarantees of Riemannian optimization for low rank matrix recovery, SIAM J. Matrix Anal. Appl."

// Estimators returns every estimator the plugin serves.
func Estimators() []sdk.Estimator {
	return []sdk.Estimator{
		&estimator{mode: Standard},
		&estimator{mode: Weak},
		&estimator{mode: Strict},
		&estimator{mode: NonPrivate},
	}
}

type estimator struct {
	mode Mode
	// observe, when set (tests), sees every iterate before its gradient step.
	observe func(l int, pt Point)
}

// Info implements sdk.Estimator.
func (e *estimator) Info() sdk.Info {
	info := sdk.Info{
		Version:    Version,
		DataKind:   data.Trace,
		References: []string{paperRef, retractionRef},
	}
	switch e.mode {
	case Standard:
		info.Name = "rgrad-dp"
		info.Summary = "DP low-rank trace regression: private spectral initialisation + DP Riemannian gradient descent (model-calibrated)"
		info.Description = "In plain words: give the rank and a budget; σ1, σr and σ_ξ of the unknown matrix are then estimated privately from tune_share (30 %) of the budget (a private median of |y_i| and a clipped moment matrix, released as response_scale, sigma1_estimate, sigmar_estimate, sigma_xi_estimate; DERIVATIONS.md §10), or taken from sigma1, sigmar, sigma_xi when you give them (choose them without looking at the data).\n\n" +
			"Algorithms 1 and 2 of Zha (2024). The initialisation privatises the singular subspaces of the unbiased moment matrix L̂ = (1/n)Σ y_i Λ⁻¹X_i through symmetric Gaussian noise on ÛÛᵀ and V̂V̂ᵀ, then the r×r core with i.i.d. noise on all entries. T iterations of Riemannian gradient descent on the rank-r manifold follow, each adding Gaussian noise projected onto the tangent space before the retraction.\n\n" +
			"The initialisation's sensitivities are high-probability bounds under the Gaussian design calibrated from σ1, σr and σ_ξ, given as options or (the default) estimated privately from tune_share of the budget (DERIVATIONS.md §10), so the guarantee is labelled as model-based (Kind model). The iterations clip each per-sample projected gradient to a public τ chosen from the same public parameters (one sample in expectation per iteration at ‖M_l − M‖_F = σr/4), so their sensitivity 2ητ/n holds for any data; the paper's unclipped model bound fails at the iterates the algorithm visits (DERIVATIONS.md §5). sensitivity=explicit (default) uses the corrected plug-ins (with the √(d1∨d2) factor the paper's Δ⁽¹⁾ misses), sensitivity=paper the paper's literal formulas; noise=exact (default) composes all 3 + T releases exactly as Gaussian DP (μ² split over them, σ from the grant's exact (ε, δ) curve), noise=zcdp composes them in zCDP (about 7 % more noise at (1, 1e-6)); both report the σ the paper's basic composition would have needed, noise=classical or analytic calibrates each release to its own (ε, δ) share as the paper does. The old calibration= is refused with a message naming sensitivity= and noise=."
		info.Guarantee = "(ε, δ)-DP with probability ≥ 1−β over data from the Gaussian trace-regression model, with σ1, σr, σ_ξ public or privately estimated; neighbours replace one (X_i, y_i)"
		info.Grants = []privacy.GrantKind{privacy.GrantApprox, privacy.GrantZCDP}
		info.Options = modelOptions{}
	case Weak:
		info.Name = "rgrad-weak"
		info.Summary = "weak-DP low-rank trace regression: only the responses are private, the design is public"
		info.Description = "The weak-DP variant of Appendix F of Zha (2024): neighbouring data sets share every X_i and differ in one response, so the sensitivities scale with σ_ξ only and the error reaches the optimal rate σ_ξ·(sqrt(r(d1+d2)/n) + r(d1+d2)/(nε)) up to logs. Same algorithm, calibrations and accounting as rgrad-dp, except that the iterations' clip τ is set at M itself and so scales with σ_ξ alone (DERIVATIONS.md §5.3). Use it only when the design is genuinely public."
		info.Guarantee = "weak (ε, δ)-DP (design public, one response replaced) with probability ≥ 1−β over the Gaussian trace-regression model, with σ1, σr, σ_ξ public or privately estimated"
		info.Grants = []privacy.GrantKind{privacy.GrantApprox, privacy.GrantZCDP}
		info.Options = weakOptions{}
	case Strict:
		info.Name = "rgrad-strict"
		info.Summary = "worst-case DP low-rank trace regression by clipping (no model assumptions)"
		info.Description = "In plain words: give the rank and a budget; clip_y and clip are then set from a private median of |y_i| (tune_share, 5 % of the budget) and the released initialisation (DERIVATIONS.md §10), or taken from the options when you give them (choose them without looking at the data).\n\n" +
			"A rigorous variant not in the paper. The initialisation releases the moment matrix L̂ computed from clipped samples (‖X_i‖_F ≤ clip_x, |y_i| ≤ clip_y) through the Gaussian mechanism and takes its rank-r SVD, soft-thresholding the singular values at the noise scale (init_shrink). Each Riemannian gradient iteration clips the per-sample projected gradient contributions to Frobenius norm ≤ clip, so its replace-one sensitivity is exactly 2·η·clip/n. The steps are composed exactly (noise=exact, the default: as Gaussian DP, or by privacy loss distributions when the private median of |y_i| is one of them) or in zCDP (noise=zcdp, and under a ρ grant). The price is the bias of clipping and the larger initialisation noise (L̂ is released whole)."
		info.Guarantee = "worst-case (ε, δ)-DP (ρ-zCDP under a ρ grant) against replacing one (X_i, y_i)"
		info.Grants = []privacy.GrantKind{privacy.GrantApprox, privacy.GrantZCDP}
		info.Options = strictOptions{}
	case NonPrivate:
		info.Name = "rgrad-nonprivate"
		info.Summary = "non-private low-rank trace regression: spectral initialisation + Riemannian gradient descent (reference)"
		info.Description = "The ε = ∞ reference: the rank-r SVD of L̂ initialises Riemannian gradient descent, without noise. Its outputs are not private."
		info.Guarantee = "none (non-private reference)"
		info.NonPrivate = true
		info.Grants = []privacy.GrantKind{privacy.GrantApprox, privacy.GrantZCDP, privacy.GrantPure}
		info.Options = commonOptions{}
	}
	return info
}

// Fit implements sdk.Estimator: take the bound options, then run the
// mode's algorithm (DERIVATIONS.md §2).
func (e *estimator) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	be := run.Backend
	if be == nil {
		be = backend.Default()
	}
	cfg, err := optionsOf(e.mode, run, be)
	if err != nil {
		return nil, err
	}
	cfg.observe = e.observe
	return fit(ctx, run, be, cfg)
}
