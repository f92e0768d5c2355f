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
	"github.com/dplr/dplr/plugins/internal/bingham"
)

// Amin is the iterative eigenvector sampling method of Amin, Dick, Kulesza,
// Muñoz Medina and Vassilvitskii (2019), the method behind diffprivlib's and
// OpenDP's DP PCA. Rows are clipped to a public norm γ; the top-r
// eigenvalues of Σ̂_γ = Σ x_ix_iᵀ/n get Laplace noise; the eigenvectors are
// drawn one at a time from the exponential mechanism with utility uᵀC_iu on
// the unit sphere of the orthogonal complement of the vectors already
// drawn (a vector Bingham law, sampled exactly), where C_i is Σ̂_γ
// compressed to that complement.
//
// Budget (pure ε, after an optional mean share): a fraction eigenvalue_share
// (default 1/(r+1)) goes to the eigenvalues, the rest is split evenly over
// the r eigenvectors; with default settings every one of the r+1 releases
// gets ε/(r+1), as in diffprivlib's split.
type Amin struct{}

// Info implements sdk.Estimator.
func (Amin) Info() sdk.Info {
	return sdk.Info{
		Name:    "pca-amin",
		Version: Version,
		Summary: "Amin et al. 2019 iterative eigenvector sampling: pure ε-DP PCA with an exact Bingham sampler",
		Description: `Iterative eigenvector sampling (Amin, Dick, Kulesza, Muñoz Medina, Vassilvitskii 2019).
Rows are scaled down to the public norm clip γ. The top-r eigenvalues of Σ̂ = Σ x_ix_iᵀ/n are
released with Laplace noise (replace-one ℓ1 sensitivity 2γ²/n: adding or removing one PSD rank-one
term moves the eigenvalues monotonically by a total of at most γ²/n; for r = 1 the top eigenvalue
moves down then up by at most γ²/n each, so its sensitivity is γ²/n). Eigenvector k is drawn from
the density ∝ exp(β_k·uᵀC_ku) on the unit sphere of the orthogonal complement of the vectors
already released, where C_k is Σ̂ restricted to that complement: the exponential mechanism with
utility sensitivity γ²/n, so β_k = ε_k·n/(2γ²). The vector Bingham law is sampled by an exact
rejection sampler (Kent, Ganeiber, Mardia 2018), exact in real arithmetic and run in float64, so
the guarantee is pure ε-DP against worst-case neighbours under that assumption. See DERIVATIONS.md §3.
Budget: eigenvalue_share of ε (after the optional mean share) for the eigenvalues, the rest
split evenly over the r eigenvectors (default share 1/(r+1): every release gets ε/(r+1)).
With center=private, a Laplace mean of rows clipped to mean_clip (ℓ1 sensitivity 2·mean_clip·√p/n)
is subtracted first.`,
		DataKind:  data.Rows,
		Guarantee: "pure ε-DP against worst-case neighbours (one row replaced by any row); rows clipped to the public norm clip; exact sampler in real arithmetic, run in float64",
		Grants:    []privacy.GrantKind{privacy.GrantPure, privacy.GrantApprox},
		Params: append([]sdk.ParamSpec{
			rankSpec(),
			{Name: "clip", Type: sdk.Float, Required: true, Min: sdk.Bound(minPositive), Doc: "public row-norm bound γ (rows longer than γ are scaled to γ)"},
			{Name: "eigenvalue_share", Type: sdk.Float, Min: sdk.Bound(0), Max: sdk.Bound(0.9), Doc: "fraction of ε for the Laplace eigenvalues (default 1/(r+1); 0: do not release eigenvalues)"},
			sigmaSpec(),
		}, centerSpec("Laplace")...),
		References: []string{
			"K. Amin, T. Dick, A. Kulesza, A. Muñoz Medina, S. Vassilvitskii. Differentially private covariance estimation. NeurIPS 2019.",
			"J. T. Kent, A. M. Ganeiber, K. V. Mardia. A new unified approach for the simulation of a wide class of directional distributions. JCGS 2018.",
			"F. McSherry, K. Talwar. Mechanism design via differential privacy. FOCS 2007.",
		},
	}
}

// Fit implements sdk.Estimator.
func (Amin) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	in, err := clippedInputs(run)
	if err != nil {
		return nil, err
	}
	ps := run.Params
	x, n, p, r, clip := in.x, in.n, in.p, in.r, in.clip
	center, mclip, mshare := in.center, in.meanClip, in.meanShare
	eps := run.Acct.Grant().Epsilon
	if !(eps > 0) || math.IsInf(eps, 0) {
		return nil, sdk.BadRequest("pca-amin needs a finite ε grant")
	}
	valShare := 1 / float64(r+1)
	if ps.Has("eigenvalue_share") {
		valShare = ps.Float("eigenvalue_share")
	}
	rest := eps
	var epsMean float64
	if center {
		epsMean = mshare * eps
		rest -= epsMean
	}
	epsVals := valShare * rest
	if !(epsVals > 0) && ps.Bool("output_sigma") {
		// Checked before any step is declared, so the refusal costs nothing.
		return nil, sdk.BadRequest("output_sigma needs eigenvalues (eigenvalue_share > 0)")
	}
	// The last vector is determined when r = p: no budget for it.
	nSampled := amin.Draws(r, p)
	epsVec := (rest - epsVals)
	if nSampled > 0 {
		epsVec /= float64(nSampled)
	}
	if center {
		if err := checkFinite(x); err != nil {
			return nil, err
		}
	}
	var mu []float64
	if center {
		sum, err := clippedSum(ctx, x, mclip)
		if err != nil {
			return nil, err
		}
		b, err := run.Acct.SpendLaplace("mean", 2*mclip*math.Sqrt(float64(p))/float64(n), p, epsMean)
		if err != nil {
			return nil, err
		}
		mu = sum
		for j := range mu {
			mu[j] /= float64(n)
		}
		run.Rand.AddLaplace(mu, b)
	}
	run.Progress("gram", 0, 1)
	sh, nClip, err := Gram(ctx, run.Backend, x, mu, clip)
	if err != nil {
		return nil, err
	}
	if err := checkGram(sh, x); err != nil {
		return nil, err
	}
	run.Progress("gram", 1, 1)
	res := &sdk.Result{}
	var noisyVals []float64
	if epsVals > 0 {
		vals, _, err := topEigen(ctx, run.Backend, sh, r)
		if err != nil {
			return nil, err
		}
		b, err := run.Acct.SpendLaplace("eigenvalues", EigenvalueSensitivity(clip, n, r), r, epsVals)
		if err != nil {
			return nil, err
		}
		noisyVals = append([]float64(nil), vals...)
		run.Rand.AddLaplace(noisyVals, b)
		res.AddScalar("laplace_scale", b, sdk.Public, "Laplace scale of the eigenvalue noise")
	}
	u, diag, err := IterativeEigenvectors(ctx, run, sh, r, epsVec, clip*clip/float64(n))
	if err != nil {
		return nil, err
	}
	res.AddMatrix("U", u, sdk.Public, "private eigenvectors, drawn in order (p×r, orthonormal)")
	if noisyVals != nil {
		res.AddSeries("eigenvalues", noisyVals, sdk.Public, "top-r eigenvalues of Σ̂_γ plus Laplace noise (in the order of the sampled vectors)")
		if ps.Bool("output_sigma") {
			res.AddMatrix("Sigma", lowRank(u, mat.NewDiagDense(r, noisyVals), 0), sdk.Public, "Σ_k λ̃_k u_k u_kᵀ (p×p, rank r)")
		}
	}
	res.AddScalar("epsilon_per_vector", epsVec, sdk.Public, "ε spent on each sampled eigenvector")
	res.AddScalar("proposals", float64(diag.Proposals), sdk.Evaluation, "Bingham proposals made (data-dependent: do not publish)")
	res.AddScalar("clipped_rows", float64(nClip), sdk.Evaluation, "rows shrunk by the clip (computed from raw data: do not publish)")
	res.Guarantee = privacy.Guarantee{
		Neighbours: "one row replaced by an arbitrary row",
		Assumptions: []string{fmt.Sprintf("the clip γ = %.6g was chosen without looking at the data", clip),
			"the Bingham sampler (Kent–Ganeiber–Mardia rejection) is exact in real arithmetic; it runs in float64 arithmetic, whose rounding is not accounted for (see DERIVATIONS.md §3)"},
	}
	return res, nil
}

// IterativeEigenvectors draws r orthonormal vectors by Amin et al.'s
// iterative exponential mechanism on the symmetric p×p matrix c (the shared
// sampler of plugins/internal/amin), spending epsVec per sampled vector
// through run.Acct (utility sensitivity sens). With r = p the last vector
// is determined by the others and costs nothing.
func IterativeEigenvectors(ctx context.Context, run *sdk.Run, c *mat.SymDense, r int, epsVec, sens float64) (*mat.Dense, bingham.Diagnostics, error) {
	return amin.Sample(ctx, run.Rand, c, amin.Config{
		Rank:    r,
		Backend: run.Backend,
		Declare: func(k int) (amin.Exponential, error) {
			return run.Acct.Exponential(fmt.Sprintf("eigenvector %d", k+1), sens, privacy.Budget{Noise: privacy.NoisePure, Epsilon: epsVec})
		},
		Progress: func(done, total int) { run.Progress("eigenvectors", done, total) },
	})
}

// EigenvalueSensitivity is the replace-one ℓ1 sensitivity of the top-r
// eigenvalues of Σ̂_γ = Σ x_ix_iᵀ/n with rows of norm ≤ γ: 2γ²/n, or γ²/n
// for r = 1 (removing a row lowers every eigenvalue, by a total of at most
// γ²/n; adding one raises them, by a total of at most γ²/n; a single
// eigenvalue therefore moves by at most γ²/n). See DERIVATIONS.md §3.
func EigenvalueSensitivity(clip float64, n, r int) float64 {
	s := clip * clip / float64(n)
	if r == 1 {
		return s
	}
	return 2 * s
}
