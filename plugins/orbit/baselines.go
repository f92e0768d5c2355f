package orbit

import (
	"context"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/amin"
	"github.com/dplr/dplr/plugins/internal/analyzegauss"
	"github.com/dplr/dplr/plugins/internal/bingham"
	"github.com/dplr/dplr/plugins/internal/pcaeval"
	"github.com/dplr/dplr/plugins/internal/project"
	"github.com/dplr/dplr/plugins/internal/rowsrc"
)

// Deflation is the iterative exponential mechanism of Amin et al. (2019):
// k successive exact rank-1 draws, each in the orthogonal complement of the
// previous ones, with ε/k each (with k = d the last vector is determined
// by the others and costs nothing).
type Deflation struct{ remote }

// Info implements sdk.Estimator.
func (Deflation) Info() sdk.Info {
	return sdk.Info{
		Name:    "orbit-deflation",
		Version: Version,
		Summary: "baseline: k successive exact vector-Bingham draws in shrinking complements (Amin et al. 2019), pure ε-DP",
		Description: "For i = 1..k draws a unit vector u_i orthogonal to u_1..u_{i−1} with density ∝ exp(β_i uᵀAu), β_i = ε/(2k) " +
			"(uᵀAu has sensitivity 1 under replace-one neighbours when rows have norm ≤ 1), with the exact rejection sampler; " +
			"when k = d the last vector is the complement of the others, costs nothing, and the d − 1 draws get ε/(2(d−1)). " +
			"Pure ε-DP by sequential composition under a pure grant; under an (ε, δ) grant noise=exact (the default) scales every draw's ε " +
			"by the largest common factor the tightest valid accounting certifies (zCDP with the exponential mechanism's bounded range, " +
			"or the privacy loss distribution), or keeps ε/k when that is tighter, and the guarantee states both the pure ε of the draws and the grant's (ε, δ). " +
			"The released H = Σ λ_i u_i u_iᵀ uses the public spectrum; no eigenvalue is released, so there is no explained-variance ratio. " +
			"The sampler is exact in real arithmetic and runs in float64. See DERIVATIONS.md §5.",
		DataKind:   data.Rows,
		Guarantee:  "ε-DP from the composition of k pure steps (pure sum; under an (ε, δ) grant also the grant's (ε, δ) by the tightest accounting); exact sampler in real arithmetic, run in float64",
		Grants:     []privacy.GrantKind{privacy.GrantPure, privacy.GrantApprox},
		Options:    deflationOptions{},
		References: []string{refAmin, refKGM, refMangoubi},
	}
}

// Fit implements sdk.Estimator: run.Plan → iterative deflation.
func (Deflation) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[deflationOptions](run)
	k, plan := o.Rank.Value, run.Plan
	b, err := plan.Budget(shareVectors)
	if err != nil {
		return nil, err
	}
	pr, err := problemFor(ctx, run, plan, &o.base)
	if err != nil {
		return nil, err
	}
	u, diag, beta, err := DeflationSample(ctx, run.Acct, run.Rand, pr.a, k, b, run.Backend)
	if err != nil {
		return nil, err
	}
	res := &sdk.Result{}
	addCommonOutputs(res, pr, u, o.lambda, sdk.Public)
	res.AddScalar("beta", beta, sdk.Public, "inverse temperature of each rank-1 draw, ε/(2k) (ε/(2(d−1)) when k = d: the last vector is determined)")
	res.AddScalar("proposals", float64(diag.Proposals), sdk.Evaluation, "EVALUATION ONLY (depends on the raw data): total ACG proposals")
	res.AddScalar("acceptance_rate", diag.AcceptanceRate, sdk.Evaluation, "EVALUATION ONLY (depends on the raw data): accepted/proposed")
	// The kind follows the composition the accountant used (see
	// DERIVATIONS.md §5): with an (ε, δ) grant and many draws, zCDP
	// composition can give a smaller ε at the grant's δ than the pure sum.
	res.Guarantee = privacy.Guarantee{Neighbours: neighboursReplace, Assumptions: []string{clipAssumption(pr), "the target spectrum Λ is public", exactSamplerCaveat}}
	addClippedRows(res, pr.clipped)
	addNote(res, plan.PureNote(o.Noise.Value))
	res.Notes = append(res.Notes, "orbit-deflation runs the same sampler as pca-amin (Amin et al., shared code in plugins/internal/amin) on A = Σ x̃x̃ᵀ/clip²; pca-amin is the maintained entry point (it also centres and releases eigenvalues) and orbit-deflation may be removed in a later release")
	return pcaeval.Add(ctx, run, res, pr.eval, pcaeval.Uncentred)
}

// shareVectors names deflation's share: one exponential step per sampled
// vector.
const shareVectors = "vectors"

// DeflationSample declares one exponential-mechanism release at budget b
// (a per-draw budget) for each sampled vector (k of them, d − 1 when k = d,
// whose last vector is determined by the others) and returns the d×k frame
// of k successive exact rank-1 draws (the shared Amin et al. sampler of
// plugins/internal/amin), their summed diagnostics and the per-vector
// inverse temperature.
func DeflationSample(ctx context.Context, acct *privacy.Accountant, rnd *privacy.Source, a *mat.SymDense, k int, b privacy.Budget, be backend.Backend) (*mat.Dense, bingham.Diagnostics, float64, error) {
	d := a.SymmetricDim()
	if err := checkRank(k, d); err != nil {
		return nil, bingham.Diagnostics{}, 0, err
	}
	var beta float64
	u, diag, err := amin.Sample(ctx, rnd, a, amin.Config{
		Rank:    k,
		Backend: be,
		Declare: func(i int) (amin.Exponential, error) {
			// uᵀAu moves by at most 1 when one row of norm ≤ 1 is replaced.
			rel, err := acct.Exponential(fmt.Sprintf("vector %d (exponential mechanism)", i+1), 1, b)
			if err != nil {
				return nil, err
			}
			beta = rel.Beta()
			return rel, nil
		},
	})
	if err != nil {
		return nil, diag, 0, err
	}
	return u, diag, beta, nil
}

// Gauss is the Gaussian mechanism on A ("Analyze Gauss"): release the top-k
// eigenvectors of A + E, E symmetric Gaussian.
type Gauss struct{ remote }

// gaussSensitivity is the replace-one Frobenius sensitivity √2 of the upper
// triangle of A = Σ x̃x̃ᵀ/clip² (rows of norm ≤ 1 after scaling; see
// DERIVATIONS.md §3).
var gaussSensitivity = kernel.MomentSensitivity(1, 1)

// Info implements sdk.Estimator.
func (Gauss) Info() sdk.Info {
	return sdk.Info{
		Name:    "orbit-gauss",
		Version: Version,
		Summary: "baseline: Gaussian mechanism on A (Analyze Gauss), then the best orbit point for the noisy matrix",
		Description: "Adds a symmetric Gaussian matrix E (entries on and above the diagonal i.i.d. N(0, σ²)) to A = Σ x̃x̃ᵀ/clip²; " +
			"the upper triangle has ℓ2 sensitivity √2 under replace-one neighbours. Releases the top-k eigenvectors of A + E " +
			"and the public spectrum, or with spectrum=private the top-k eigenvalues of A + E clamped at 0 (post-processing). " +
			"σ is set by noise=exact (the default: with a numeric clip the exact Gaussian-DP curve of the grant, about 7 % less noise than zCDP at (1, 1e-6); " +
			"with clip=auto the pure quantile step joins through the privacy loss distribution, a little less saving), zcdp, or classically (ε ≤ 1 only) " +
			"or analytically (Balle & Wang 2018) from (ε, δ). Outputs also explained_variance_ratio: the top-k eigenvalues of A + E over its trace (post-processing). " +
			"A is rounded to the noise grid before the noise is added. See DERIVATIONS.md §6.",
		DataKind:   data.Rows,
		Guarantee:  "(ε, δ)-DP (exact Gaussian composition, or the privacy loss distribution with clip=auto) or ρ-zCDP",
		Grants:     []privacy.GrantKind{privacy.GrantApprox, privacy.GrantZCDP},
		Options:    gaussOptions{},
		References: []string{refDTTZ, refMangoubi},
	}
}

// shareNoisyA names orbit-gauss's single Gaussian share.
const shareNoisyA = "A + E"

// Fit implements sdk.Estimator: run.Plan → Analyze Gauss on A.
func (Gauss) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[gaussOptions](run)
	plan := run.Plan
	b, err := plan.Budget(shareNoisyA)
	if err != nil {
		return nil, err
	}
	pr, err := problemFor(ctx, run, plan, &o.base)
	if err != nil {
		return nil, err
	}
	res := &sdk.Result{}
	if err := gaussOrbit(ctx, run, res, pr, o, b); err != nil {
		return nil, err
	}
	res.Guarantee = privacy.Guarantee{Neighbours: neighboursReplace, Assumptions: []string{clipAssumption(pr)}}
	addClippedRows(res, pr.clipped)
	addNote(res, privacy.GaussianNote(o.Noise.Value, run.Acct.Grant().Kind))
	addNote(res, "orbit-gauss is the Analyze Gauss mechanism of pca-analyze-gauss (shared code in plugins/internal/analyzegauss) on A = Σ x̃x̃ᵀ/clip²; pca-analyze-gauss is the maintained entry point (it also centres and releases eigenvalues and the explained-variance ratio) and orbit-gauss may be removed in a later release")
	return pcaeval.Add(ctx, run, res, pr.eval, pcaeval.Uncentred)
}

// gaussOrbit is the Gaussian baseline (DERIVATIONS.md §6): A + E with A
// rounded to the release grid, its top-k eigenvectors, and the public
// spectrum or (spectrum=private) the top-k eigenvalues clamped at 0.
func gaussOrbit(ctx context.Context, run *sdk.Run, res *sdk.Result, pr *problem, o *gaussOptions, b privacy.Budget) error {
	d := pr.a.SymmetricDim()
	rel, err := run.Acct.Gaussian("A + E (Gaussian mechanism)", gaussSensitivity, analyzegauss.Dim(d), b)
	if err != nil {
		return err
	}
	noisy, vals, vecs, _, err := analyzegauss.Release(ctx, run.Backend, run.Rand, rel, pr.a, o.Rank.Value, false)
	if err != nil {
		return fmt.Errorf("orbit-gauss: %w", err)
	}
	lambda := o.lambda
	if o.private {
		lambda = slices.Clone(vals)
		for i := range lambda {
			lambda[i] = math.Max(lambda[i], 0)
		}
	}
	addCommonOutputs(res, pr, vecs, lambda, sdk.Public)
	res.AddScalar("sigma", rel.Scale(), sdk.Public, "noise standard deviation of each entry of E")
	if evr, ok := pcaeval.ExplainedRatio(vals, analyzegauss.RestOfTrace(noisy, vals)); ok {
		res.AddSeries("explained_variance_ratio", evr, sdk.Public, "top-k eigenvalues of A + E over its trace (negative values counted as 0): a private estimate of the share of the clipped rows' second moment each component explains (post-processing)")
	}
	return nil
}

// NonPrivate releases the exact top-k eigenvectors of A: the reference.
type NonPrivate struct{ project.Projection }

// Info implements sdk.Estimator.
func (NonPrivate) Info() sdk.Info {
	return sdk.Info{
		Name:        "orbit-nonprivate",
		Version:     Version,
		Summary:     "reference: exact top-k eigenvectors of A (NOT private)",
		Description: "The orbit optimum: U = top-k eigenvectors of A = Σ x̃x̃ᵀ/clip², with the public spectrum or (spectrum=true) A's own top-k eigenvalues. Not private.",
		DataKind:    data.Rows,
		Guarantee:   "none (non-private reference)",
		Grants:      []privacy.GrantKind{privacy.GrantPure, privacy.GrantApprox, privacy.GrantZCDP},
		Options:     nonPrivateOptions{},
		References:  []string{refMangoubi},
		NonPrivate:  true,
	}
}

// Fit implements sdk.Estimator.
func (NonPrivate) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[nonPrivateOptions](run)
	k, d := o.Rank.Value, run.Data.P()
	c := o.Options.Value()
	src, err := rowsrc.Of(run.Data) // the rows, or passes over a remote data set
	if err != nil {
		return nil, err
	}
	if o.Options.Auto() {
		if src.Rows() == nil {
			return nil, sdk.BadRequest("%w", errRemoteExactQuantile)
		}
		// The reference is not private: clip=auto takes the exact
		// clip_quantile of the norms (an evaluation-only choice).
		x := src.Rows()
		norms := make([]float64, x.RawMatrix().Rows)
		for i := range norms {
			norms[i] = kernel.Norm(x.RawRowView(i))
		}
		slices.Sort(norms)
		c = norms[min(len(norms)-1, int(o.ClipQuantile*float64(len(norms))))]
	}
	a, _, err := clippedMatrix(ctx, src, c)
	if err != nil {
		return nil, err
	}
	gamma, vecs, err := run.Backend.EigSym(a)
	if err != nil {
		return nil, fmt.Errorf("eigenvectors of A: %w", err)
	}
	lambda := o.lambda
	if o.Spectrum == "true" {
		lambda = slices.Clone(gamma[:k])
		for i := range lambda {
			lambda[i] = math.Max(lambda[i], 0)
		}
	}
	res := &sdk.Result{}
	pr := &problem{a: a, gamma: gamma, clip: c, eval: o.Evaluate.Value}
	addCommonOutputs(res, pr, mat.DenseCopyOf(vecs.Slice(0, d, 0, k)), lambda, sdk.Evaluation)
	res.Guarantee = privacy.Guarantee{Kind: privacy.None}
	return pcaeval.Add(ctx, run, res, pr.eval, pcaeval.Uncentred)
}
