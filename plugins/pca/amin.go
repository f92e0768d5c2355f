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
		Options:   aminOptions{},
		References: []string{
			"K. Amin, T. Dick, A. Kulesza, A. Muñoz Medina, S. Vassilvitskii. Differentially private covariance estimation. NeurIPS 2019.",
			"J. T. Kent, A. M. Ganeiber, K. V. Mardia. A new unified approach for the simulation of a wide class of directional distributions. JCGS 2018.",
			"F. McSherry, K. Talwar. Mechanism design via differential privacy. FOCS 2007.",
		},
	}
}

// Fit implements sdk.Estimator: bind → plan → Amin et al.
func (Amin) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[aminOptions](run)
	x, n, p, err := rowsData(run.Data)
	if err != nil {
		return nil, err
	}
	plan, err := aminPlan(run, o, p)
	if err != nil {
		return nil, err
	}
	var mu []float64
	if o.private() {
		if mu, err = privateMeanLaplace(ctx, run, plan, x, o.meanClip(o.Clip.Value)); err != nil {
			return nil, err
		}
	}
	run.Progress("gram", 0, 1)
	sh, nClip, err := Gram(ctx, run.Backend, x, mu, o.Clip.Value)
	if err != nil {
		return nil, err
	}
	if err := checkGram(sh, x); err != nil {
		return nil, err
	}
	run.Progress("gram", 1, 1)
	res, err := aminCovariance(ctx, run, plan, sh, n, o)
	if err != nil {
		return nil, err
	}
	res.AddScalar("clipped_rows", float64(nClip), sdk.Evaluation, "rows shrunk by the clip (computed from raw data: do not publish)")
	return withEvaluation(ctx, run, res, o.Evaluate.Value)
}

// aminPlan splits a pure (or the ε of an (ε, δ)) grant: mean_share for the
// optional Laplace mean, then eigenvalue_share of the rest for the
// eigenvalues and the remainder evenly over the sampled eigenvectors
// (r of them, p − 1 when r = p).
func aminPlan(run *sdk.Run, o *aminOptions, p int) (*privacy.Plan, error) {
	rest := 1.0
	var shares []privacy.Share
	if o.private() {
		shares = append(shares, privacy.Share{Name: shareMean, Weight: o.MeanShare, Mechanism: privacy.MechLaplace})
		rest -= o.MeanShare
	}
	vs := o.valueShare()
	if vs > 0 {
		shares = append(shares, privacy.Share{Name: shareValues, Weight: vs * rest, Mechanism: privacy.MechLaplace})
	}
	shares = append(shares, privacy.Share{Name: shareVectors, Weight: (1 - vs) * rest, Steps: amin.Draws(o.Rank.Value, p), Mechanism: privacy.MechExponential})
	return sdk.NewPlan(run, privacy.NoisePure, shares...)
}

// privateMeanLaplace releases the mean of the rows clipped to c with the
// Laplace mechanism (ℓ1 sensitivity 2c√p/n, DERIVATIONS.md §5).
func privateMeanLaplace(ctx context.Context, run *sdk.Run, plan *privacy.Plan, x *mat.Dense, c float64) ([]float64, error) {
	n, p := x.Dims()
	b, err := plan.Budget(shareMean)
	if err != nil {
		return nil, err
	}
	if err := checkFinite(x); err != nil { // an input error, before any step
		return nil, err
	}
	rel, err := run.Acct.Laplace("mean", 2*c*math.Sqrt(float64(p))/float64(n), p, b)
	if err != nil {
		return nil, err
	}
	return clippedMeanRelease(ctx, run, rel, x, c)
}

// aminCovariance is Amin et al.'s algorithm (DERIVATIONS.md §3): Laplace
// top-r eigenvalues of Σ̂_γ, then r iterative exponential-mechanism draws.
func aminCovariance(ctx context.Context, run *sdk.Run, plan *privacy.Plan, sh *mat.SymDense, n int, o *aminOptions) (*sdk.Result, error) {
	r, clip := o.Rank.Value, o.Clip.Value
	res := &sdk.Result{}
	var noisyVals []float64
	if o.valueShare() > 0 {
		b, err := plan.Budget(shareValues)
		if err != nil {
			return nil, err
		}
		vals, _, err := topEigen(ctx, run.Backend, sh, r)
		if err != nil {
			return nil, err
		}
		rel, err := run.Acct.Laplace("eigenvalues", EigenvalueSensitivity(clip, n, r), r, b)
		if err != nil {
			return nil, err
		}
		noisyVals = append([]float64(nil), vals...)
		if err := rel.Add(run.Rand, noisyVals); err != nil {
			return nil, err
		}
		res.AddScalar("laplace_scale", rel.Scale(), sdk.Public, "Laplace scale of the eigenvalue noise")
	}
	bv, err := plan.Budget(shareVectors)
	if err != nil {
		return nil, err
	}
	u, diag, err := IterativeEigenvectors(ctx, run, sh, r, bv, clip*clip/float64(n))
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
	res.AddScalar("epsilon_per_vector", bv.Epsilon, sdk.Public, "ε spent on each sampled eigenvector")
	res.AddScalar("proposals", float64(diag.Proposals), sdk.Evaluation, "Bingham proposals made (data-dependent: do not publish)")
	res.Guarantee = privacy.Guarantee{
		Neighbours: "one row replaced by an arbitrary row",
		Assumptions: []string{fmt.Sprintf("the clip γ = %.6g was chosen without looking at the data", clip),
			"the Bingham sampler (Kent–Ganeiber–Mardia rejection) is exact in real arithmetic; it runs in float64 arithmetic, whose rounding is not accounted for (see DERIVATIONS.md §3)"},
	}
	return res, nil
}

// IterativeEigenvectors draws r orthonormal vectors by Amin et al.'s
// iterative exponential mechanism on the symmetric p×p matrix c (the shared
// sampler of plugins/internal/amin), declaring one exponential release per
// sampled vector at the per-draw budget b (utility sensitivity sens). With
// r = p the last vector is determined by the others and costs nothing.
func IterativeEigenvectors(ctx context.Context, run *sdk.Run, c *mat.SymDense, r int, b privacy.Budget, sens float64) (*mat.Dense, bingham.Diagnostics, error) {
	return amin.Sample(ctx, run.Rand, c, amin.Config{
		Rank:    r,
		Backend: run.Backend,
		Declare: func(k int) (amin.Exponential, error) {
			return run.Acct.Exponential(fmt.Sprintf("eigenvector %d", k+1), sens, b)
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
