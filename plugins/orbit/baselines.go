package orbit

import (
	"context"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/amin"
	"github.com/dplr/dplr/plugins/internal/analyzegauss"
	"github.com/dplr/dplr/plugins/internal/bingham"
	rowclip "github.com/dplr/dplr/plugins/internal/clip"
)

// Deflation is the iterative exponential mechanism of Amin et al. (2019):
// k successive exact rank-1 draws, each in the orthogonal complement of the
// previous ones, with ε/k each (with k = d the last vector is determined
// by the others and costs nothing).
type Deflation struct{}

// Info implements sdk.Estimator.
func (Deflation) Info() sdk.Info {
	return sdk.Info{
		Name:    "orbit-deflation",
		Version: Version,
		Summary: "baseline: k successive exact vector-Bingham draws in shrinking complements (Amin et al. 2019), pure ε-DP",
		Description: "For i = 1..k draws a unit vector u_i orthogonal to u_1..u_{i−1} with density ∝ exp(β_i uᵀAu), β_i = ε/(2k) " +
			"(uᵀAu has sensitivity 1 under replace-one neighbours when rows have norm ≤ 1), with the exact rejection sampler; " +
			"when k = d the last vector is the complement of the others, costs nothing, and the d − 1 draws get ε/(2(d−1)). " +
			"Pure ε-DP by sequential composition; with an (ε, δ) grant the label follows the tightest composition of the k pure steps " +
			"(zCDP composition may give a smaller ε at the grant's δ). The released H = Σ λ_i u_i u_iᵀ uses the public spectrum. " +
			"The sampler is exact in real arithmetic and runs in float64. See DERIVATIONS.md §5.",
		DataKind:   data.Rows,
		Guarantee:  "ε-DP from the composition of k pure steps (pure sum, or zCDP at the grant's δ when tighter); exact sampler in real arithmetic, run in float64",
		Grants:     []privacy.GrantKind{privacy.GrantPure, privacy.GrantApprox},
		Params:     []sdk.ParamSpec{paramRank, paramSpectrum, paramClip},
		References: []string{refAmin, refKGM, refMangoubi},
	}
}

// Fit implements sdk.Estimator.
func (Deflation) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	pr, err := setup(ctx, run, true)
	if err != nil {
		return nil, err
	}
	k, lambda, eps, a, gamma, clipped := pr.k, pr.lambda, pr.eps, pr.a, pr.gamma, pr.clipped
	u, diag, betas, err := DeflationSample(ctx, run.Acct, run.Rand, a, k, eps, run.Backend)
	if err != nil {
		return nil, err
	}
	res := &sdk.Result{}
	addCommonOutputs(res, a, gamma, u, lambda, sdk.Public)
	res.AddScalar("beta", betas, sdk.Public, "inverse temperature of each rank-1 draw, ε/(2k) (ε/(2(d−1)) when k = d: the last vector is determined)")
	res.AddScalar("proposals", float64(diag.Proposals), sdk.Evaluation, "EVALUATION ONLY (depends on the raw data): total ACG proposals")
	res.AddScalar("acceptance_rate", diag.AcceptanceRate, sdk.Evaluation, "EVALUATION ONLY (depends on the raw data): accepted/proposed")
	// The kind follows the composition the accountant used (see
	// DERIVATIONS.md §5): with an (ε, δ) grant and many draws, zCDP
	// composition can give a smaller ε at the grant's δ than the pure sum.
	res.Guarantee = privacy.Guarantee{Neighbours: neighboursReplace, Assumptions: []string{"clip is public", "the target spectrum Λ is public", exactSamplerCaveat}}
	addClippedRows(res, clipped)
	return res, nil
}

// DeflationSample spends eps/k per vector on acct (eps/(d−1) when k = d,
// whose last vector is determined by the others) and returns the d×k frame
// of k successive exact rank-1 exponential-mechanism draws (the shared
// Amin et al. sampler of plugins/internal/amin), their summed diagnostics
// and the per-vector inverse temperature.
func DeflationSample(ctx context.Context, acct *privacy.Accountant, rnd *privacy.Source, a *mat.SymDense, k int, eps float64, be backend.Backend) (*mat.Dense, bingham.Diagnostics, float64, error) {
	d := a.SymmetricDim()
	if err := checkRank(k, d); err != nil {
		return nil, bingham.Diagnostics{}, 0, err
	}
	epsEach := eps / float64(amin.Draws(k, d))
	var beta float64
	u, diag, err := amin.Sample(ctx, rnd, a, amin.Config{
		Rank:    k,
		Backend: be,
		Spend: func(i int) (float64, error) {
			var err error
			// uᵀAu moves by at most 1 when one row of norm ≤ 1 is replaced.
			beta, err = acct.SpendExponential(fmt.Sprintf("vector %d (exponential mechanism)", i+1), 1, epsEach)
			return beta, err
		},
	})
	if err != nil {
		return nil, diag, 0, err
	}
	return u, diag, beta, nil
}

// Gauss is the Gaussian mechanism on A ("Analyze Gauss"): release the top-k
// eigenvectors of A + E, E symmetric Gaussian.
type Gauss struct{}

// gaussSensitivity is the replace-one Frobenius sensitivity √2 of the upper
// triangle of A = Σ x̃x̃ᵀ/clip² (rows of norm ≤ 1 after scaling; see
// DERIVATIONS.md §3).
var gaussSensitivity = rowclip.MomentSensitivity(1, 1)

// Gaussian calibrations.
const (
	GaussZCDP      = "zcdp"
	GaussClassical = "classical"
	GaussAnalytic  = "analytic"
)

// Info implements sdk.Estimator.
func (Gauss) Info() sdk.Info {
	return sdk.Info{
		Name:    "orbit-gauss",
		Version: Version,
		Summary: "baseline: Gaussian mechanism on A (Analyze Gauss), then the best orbit point for the noisy matrix",
		Description: "Adds a symmetric Gaussian matrix E (entries on and above the diagonal i.i.d. N(0, σ²)) to A = Σ x̃x̃ᵀ/clip²; " +
			"the upper triangle has ℓ2 sensitivity √2 under replace-one neighbours. Releases the top-k eigenvectors of A + E " +
			"and the public spectrum, or with spectrum=private the top-k eigenvalues of A + E clamped at 0 (post-processing). " +
			"σ is set from the zCDP budget (default), or classically (ε ≤ 1 only) or analytically (Balle & Wang 2018) from (ε, δ). " +
			"A is rounded to the noise grid before the noise is added. See DERIVATIONS.md §6.",
		DataKind:  data.Rows,
		Guarantee: "(ε, δ)-DP or ρ-zCDP (exact)",
		Grants:    []privacy.GrantKind{privacy.GrantApprox, privacy.GrantZCDP},
		Params: []sdk.ParamSpec{paramRank, {Name: "spectrum", Type: sdk.String, Default: "projection",
			Doc: paramSpectrum.Doc + "; or \"private\": the top-k eigenvalues of A + E clamped at 0"}, paramClip,
			{Name: "calibration", Type: sdk.String, Default: GaussZCDP, Choices: []string{GaussZCDP, GaussClassical, GaussAnalytic},
				Doc: "zcdp: σ = √2/sqrt(2ρ) with ρ the grant's zCDP budget; classical: σ = √2·sqrt(2 ln(1.25/δ))/ε (ε ≤ 1); analytic: Balle–Wang"}},
		References: []string{refDTTZ, refMangoubi},
	}
}

// Fit implements sdk.Estimator.
func (Gauss) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	p := run.Params
	k := p.Int("rank")
	d := run.Data.P()
	if err := checkRank(k, d); err != nil {
		return nil, err
	}
	private := p.String("spectrum") == "private"
	var lambda []float64
	if !private {
		var err error
		if lambda, err = parseSpectrum(p.String("spectrum"), k); err != nil {
			return nil, err
		}
	}
	cal := p.String("calibration")
	g := run.Acct.Grant()
	if cal != GaussZCDP && g.Kind != privacy.GrantApprox {
		return nil, sdk.BadRequest("calibration %s needs an (ε, δ) grant, got %s", cal, g.Kind)
	}
	if cal == GaussClassical && g.Epsilon > 1 {
		return nil, sdk.BadRequest("classical Gaussian calibration holds only for ε ≤ 1, got ε = %v (use calibration=analytic or zcdp)", g.Epsilon)
	}
	a, clipped, err := ClippedMatrix(ctx, run.Data, p.Float("clip"), run.Backend)
	if err != nil {
		return nil, err
	}
	gamma, _, err := run.Backend.EigSym(a)
	if err != nil {
		return nil, fmt.Errorf("eigenvalues of A: %w", err)
	}
	const name = "A + E (Gaussian mechanism)"
	dim := analyzegauss.Dim(d)
	var sigma float64
	if cal == GaussZCDP {
		rho, err := run.Acct.TotalRho()
		if err != nil {
			return nil, err
		}
		sigma, err = run.Acct.SpendGaussianRho(name, gaussSensitivity, dim, rho)
		if err != nil {
			return nil, err
		}
	} else {
		sigma, err = run.Acct.SpendGaussianEpsDelta(name, gaussSensitivity, dim, g.Epsilon, g.Delta, cal)
		if err != nil {
			return nil, err
		}
	}
	_, vals, vecs, err := analyzegauss.Release(ctx, run.Backend, run.Rand, a, sigma, k)
	if err != nil {
		return nil, fmt.Errorf("orbit-gauss: %w", err)
	}
	if private {
		lambda = slices.Clone(vals)
		for i := range lambda {
			lambda[i] = math.Max(lambda[i], 0)
		}
	}
	res := &sdk.Result{}
	addCommonOutputs(res, a, gamma, vecs, lambda, sdk.Public)
	res.AddScalar("sigma", sigma, sdk.Public, "noise standard deviation of each entry of E")
	res.Guarantee = privacy.Guarantee{Neighbours: neighboursReplace, Assumptions: []string{"clip is public"}}
	addClippedRows(res, clipped)
	return res, nil
}

// NonPrivate releases the exact top-k eigenvectors of A: the reference.
type NonPrivate struct{}

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
		Params: []sdk.ParamSpec{paramRank, {Name: "spectrum", Type: sdk.String, Default: "projection",
			Doc: paramSpectrum.Doc + "; or \"true\": A's own top-k eigenvalues"}, paramClip},
		References: []string{refMangoubi},
		NonPrivate: true,
	}
}

// Fit implements sdk.Estimator.
func (NonPrivate) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	p := run.Params
	k := p.Int("rank")
	d := run.Data.P()
	if err := checkRank(k, d); err != nil {
		return nil, err
	}
	a, _, err := ClippedMatrix(ctx, run.Data, p.Float("clip"), run.Backend)
	if err != nil {
		return nil, err
	}
	gamma, vecs, err := run.Backend.EigSym(a)
	if err != nil {
		return nil, fmt.Errorf("eigenvectors of A: %w", err)
	}
	var lambda []float64
	if p.String("spectrum") == "true" {
		lambda = slices.Clone(gamma[:k])
		for i := range lambda {
			lambda[i] = math.Max(lambda[i], 0)
		}
	} else if lambda, err = parseSpectrum(p.String("spectrum"), k); err != nil {
		return nil, err
	}
	res := &sdk.Result{}
	addCommonOutputs(res, a, gamma, mat.DenseCopyOf(vecs.Slice(0, d, 0, k)), lambda, sdk.Evaluation)
	res.Guarantee = privacy.Guarantee{Kind: privacy.None}
	return res, nil
}
