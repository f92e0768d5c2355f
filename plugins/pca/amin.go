package pca

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/amin"
	"github.com/dplr/dplr/plugins/internal/analyzegauss"
	"github.com/dplr/dplr/plugins/internal/pcaeval"
	"github.com/dplr/dplr/plugins/internal/project"
)

// Amin is pca-amin, the iterative eigenvector sampling of Amin, Dick,
// Kulesza, Muñoz Medina and Vassilvitskii (2019) behind diffprivlib's and
// OpenDP's DP PCA (its description and DERIVATIONS.md §3 say how it works).
type Amin struct{ project.Projection }

// Info implements sdk.Estimator.
func (Amin) Info() sdk.Info {
	return sdk.Info{
		Name:    "pca-amin",
		Version: Version,
		Summary: "Amin et al. 2019 iterative eigenvector sampling: pure ε-DP PCA with an exact Bingham sampler",
		Description: `Pure ε-differentially private PCA (no δ): use it only when your policy forbids δ > 0,
and only with a large budget or few features. Pure-ε PCA needs far more data than Analyze Gauss:
on Fashion-MNIST (n = 60000, p = 784) it captures well under half of the non-private variance
even at ε = 4, close to a random subspace at ε ≤ 1 (bench/results/pca.md); on data with tens of
features and n·ε in the tens of thousands it does well.

How it works: rows longer than the clip are shortened to it; the top-r eigenvalues of
Σ x_i x_iᵀ/n get Laplace noise; then each component is drawn at random from a distribution that
favours directions of high variance (the exponential mechanism on the sphere, sampled exactly by
Kent–Ganeiber–Mardia rejection in float64), one after the other.

Defaults as in pca-analyze-gauss: clip=auto (a private median of the row norms, clip_share of
the budget, released as output clip), center=private optional (a Laplace mean, released as output
mean). Budget: eigenvalue_share of ε (after the clip and mean shares) for the eigenvalues, the rest
split evenly over the r eigenvectors. With a pure grant every step gets exactly that share of ε
(pure ε-DP). With an (ε, δ) grant, noise=exact (the default) scales every step's share by the
largest common factor the tightest valid accounting certifies, never below 1 (1.42 at rank 10,
ε = 1, δ = 1e-6, public clip; about 1.002 at rank 1); the result's guarantee then states the
pure ε of the steps and the (ε, δ) it meets.

Outputs: U; with eigenvalue_share > 0 the Laplace eigenvalues and, for 2 ≤ r, the
explained_variance_ratio estimated from them and from the sum of the remaining eigenvalues,
released in the same Laplace step at no extra cost (for r = 1 that sum would double the
eigenvalue's noise, so rank 1 releases no ratio; with eigenvalue_share = 0 no eigenvalue and no
ratio is released). Derivations: DERIVATIONS.md §3, §5, §6.`,
		DataKind:  data.Rows,
		Guarantee: "pure ε-DP against worst-case neighbours (one row replaced by any row), and under an (ε, δ) grant with noise=exact the grant's (ε, δ) by the tightest accounting of the same pure steps; rows clipped to the clip (public, or a private quantile with clip=auto); exact sampler in real arithmetic, run in float64",
		Grants:    []privacy.GrantKind{privacy.GrantPure, privacy.GrantApprox},
		Options:   aminOptions{},
		References: []string{
			"K. Amin, T. Dick, A. Kulesza, A. Muñoz Medina, S. Vassilvitskii. Differentially private covariance estimation. NeurIPS 2019.",
			"J. T. Kent, A. M. Ganeiber, K. V. Mardia. A new unified approach for the simulation of a wide class of directional distributions. JCGS 2018.",
			"F. McSherry, K. Talwar. Mechanism design via differential privacy. FOCS 2007.",
		},
	}
}

// Fit implements sdk.Estimator: run.Plan → Amin et al.
func (Amin) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[aminOptions](run)
	src, _, _, err := sourceOf(run.Data)
	if err != nil {
		return nil, err
	}
	pre, err := preprocess(ctx, run, run.Plan, src, &o.clipOptions, &o.centerOptions)
	if err != nil {
		return nil, err
	}
	res, err := aminCovariance(ctx, run, run.Plan, pre.gram, pre.n, pre.clip, o)
	if err != nil {
		return nil, err
	}
	pre.report(res)
	res.Notes = append(res.Notes, run.Plan.PureNote(o.Noise.Value))
	return withEvaluation(ctx, run, res, o.Evaluate.Value)
}

// Plan implements sdk.Planner: the grant split in fractions of ε (a pure
// plan, which noise=exact scales as privacy.NewPurePlan allows): the
// preprocessing shares, then eigenvalue_share of the rest for the
// eigenvalues and the remainder evenly over the sampled eigenvectors
// (DERIVATIONS.md §3.1); feature_scale=private is refused when it cannot
// locate any column's scale.
func (o *aminOptions) Plan(s sdk.Shape, g privacy.Grant) (sdk.PlanSpec, error) {
	shares, rest := newPrepPlan(s, &o.clipOptions, &o.centerOptions, privacy.MechLaplace).sized(&o.clipOptions, s.N, g, true).shares(privacy.MechLaplace)
	if vs := o.valueShare(); vs > 0 {
		shares = append(shares, privacy.Share{Name: shareValues, Weight: vs * rest, Mechanism: privacy.MechLaplace})
	}
	shares = append(shares, privacy.Share{Name: shareVectors, Weight: (1 - o.valueShare()) * rest, Steps: amin.Draws(o.Rank.Value, s.P), Mechanism: privacy.MechExponential})
	spec := sdk.PlanSpec{Noise: o.Noise.Value, Shares: shares, Pure: true}
	return spec, o.checkScalesLocatable(s, g, spec.New)
}

// aminCovariance is Amin et al.'s algorithm (DERIVATIONS.md §3): Laplace
// top-r eigenvalues of Σ̂_γ, then r iterative exponential-mechanism draws.
func aminCovariance(ctx context.Context, run *sdk.Run, plan *privacy.Plan, sh *mat.SymDense, n int, clip float64, o *aminOptions) (*sdk.Result, error) {
	r := o.Rank.Value
	res := &sdk.Result{}
	var noisyVals []float64
	var err error
	if o.valueShare() > 0 {
		if noisyVals, err = aminEigenvalues(ctx, run, plan, res, sh, n, clip, r); err != nil {
			return nil, err
		}
	}
	bv, err := plan.Budget(shareVectors)
	if err != nil {
		return nil, err
	}
	// Amin et al.'s iterative exponential mechanism, one release per draw
	// (with r = p the last vector is determined and costs nothing).
	u, diag, err := amin.Sample(ctx, run.Rand, sh, amin.Config{
		Rank:    r,
		Backend: run.Backend,
		Declare: func(k int) (amin.Exponential, error) {
			return run.Acct.Exponential(fmt.Sprintf("eigenvector %d", k+1), clip*clip/float64(n), bv)
		},
		Progress: func(done, total int) { run.Progress("eigenvectors", done, total) },
	})
	if err != nil {
		return nil, err
	}
	res.AddMatrix("U", u, sdk.Public, "private eigenvectors, drawn in order (p×r, orthonormal)")
	if noisyVals != nil {
		res.AddSeries("eigenvalues", noisyVals, sdk.Public, "top-r eigenvalues of Σ̂_γ plus Laplace noise (in the order of the sampled vectors)")
		if o.OutputSigma {
			res.AddMatrix("Sigma", lowRank(u, mat.NewDiagDense(r, noisyVals), 0), sdk.Public, "Σ_k λ̃_k u_k u_kᵀ (p×p, rank r)")
		}
	}
	res.AddScalar("epsilon_per_vector", privacy.StepEpsilon(bv, privacy.MechExponential), sdk.Public, "ε spent on each sampled eigenvector (its pure ε)")
	res.AddScalar("proposals", float64(diag.Proposals), sdk.Evaluation, "Bingham proposals made (data-dependent: do not publish)")
	res.Guarantee = privacy.Guarantee{
		Neighbours:  "one row replaced by an arbitrary row",
		Assumptions: []string{"the Bingham sampler (Kent–Ganeiber–Mardia rejection) is exact in real arithmetic; it runs in float64 arithmetic, whose rounding is not accounted for (see DERIVATIONS.md §3)"},
	}
	return res, nil
}

// aminEigenvalues is the eigenvalue step (DERIVATIONS.md §3.2): Laplace
// noise on the top-r eigenvalues of Σ̂_γ and, when 2 ≤ r < p, in the same
// release, the sum of the others. It adds laplace_scale, eigenvalue_tail
// and explained_variance_ratio to res and returns the noisy eigenvalues.
func aminEigenvalues(ctx context.Context, run *sdk.Run, plan *privacy.Plan, res *sdk.Result, sh *mat.SymDense, n int, clip float64, r int) ([]float64, error) {
	p := sh.SymmetricDim()
	vals, _, err := topEigen(ctx, run.Backend, sh, r)
	if err != nil {
		return nil, err
	}
	tail := r >= 2 && r < p // the sum of the others leaves the ℓ1 sensitivity unchanged only for r ≥ 2 (DERIVATIONS.md §3.2)
	out := append([]float64(nil), vals...)
	if tail { // the sum of the other eigenvalues
		out = append(out, math.Max(analyzegauss.RestOfTrace(sh, vals), 0))
	}
	rel, err := releaseAt(run, plan, shareValues, "eigenvalues", EigenvalueSensitivity(clip, n, r), len(out))
	if err != nil {
		return nil, err
	}
	if err := rel.Add(run.Rand, out); err != nil {
		return nil, err
	}
	res.AddScalar("laplace_scale", rel.Scale(), sdk.Public, "Laplace scale of the eigenvalue noise")
	noisy := out[:r]
	switch {
	case tail:
		res.AddScalar("eigenvalue_tail", out[r], sdk.Public, "the sum of the other p − r eigenvalues of Σ̂_γ (its trace minus the top r) plus Laplace noise, released with the eigenvalues at the same sensitivity and ε")
		if evr, ok := pcaeval.ExplainedRatio(noisy, out[r]); ok {
			res.AddSeries("explained_variance_ratio", evr, sdk.Public, "max(λ̃_k, 0) / (Σ_j max(λ̃_j, 0) + max(tail, 0)): a private estimate of the share of the (clipped) variance each component explains, from the released eigenvalues and tail (post-processing)")
		}
	case r == p:
		if evr, ok := pcaeval.ExplainedRatio(noisy, 0); ok {
			res.AddSeries("explained_variance_ratio", evr, sdk.Public, "max(λ̃_k, 0) / Σ_j max(λ̃_j, 0) over all p released eigenvalues: a private estimate of each component's share of the (clipped) variance (post-processing)")
		}
	}
	return noisy, nil
}

// EigenvalueSensitivity is the replace-one ℓ1 sensitivity of the top-r
// eigenvalues of Σ̂_γ with rows of norm ≤ γ, also covering the sum of the
// others for r ≥ 2: 2γ²/n, or γ²/n for r = 1 (DERIVATIONS.md §3.2).
func EigenvalueSensitivity(clip float64, n, r int) float64 {
	s := clip * clip / float64(n)
	if r == 1 {
		return s
	}
	return 2 * s
}

// Passes implements sdk.RemoteEstimator.
func (Amin) Passes(opts any, _ sdk.Shape) ([]string, error) {
	o := opts.(*aminOptions)
	return remotePasses(&o.clipOptions, &o.centerOptions, &o.evaluation)
}
