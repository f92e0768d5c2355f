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
	"github.com/dplr/dplr/plugins/internal/bingham"
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

// DeflationSample spends eps/k per vector on acct (eps/(d−1) when k = d, whose
// last vector is determined by the others) and returns the d×k frame
// of k successive exact rank-1 exponential-mechanism draws, their summed
// diagnostics and the per-vector inverse temperature.
func DeflationSample(ctx context.Context, acct *privacy.Accountant, rnd *privacy.Source, a *mat.SymDense, k int, eps float64, be backend.Backend) (*mat.Dense, bingham.Diagnostics, float64, error) {
	d := a.SymmetricDim()
	if err := checkRank(k, d); err != nil {
		return nil, bingham.Diagnostics{}, 0, err
	}
	if be == nil {
		be = backend.Default()
	}
	u := mat.NewDense(d, k, nil)
	var total bingham.Diagnostics
	var beta float64
	// With k = d the last vector is the (one-dimensional) complement of the
	// others: every unit vector in it scores the same, so it is taken as
	// is and costs nothing, and the budget goes to the d − 1 real draws.
	sampled := k
	if k == d {
		sampled = d - 1
	}
	for i := 0; i < k; i++ {
		if err := ctx.Err(); err != nil {
			return nil, total, 0, err
		}
		// Orthonormal basis N of the complement of u_1..u_{i−1} (public).
		nb, err := complementBasis(u, columnsBelow(i), be)
		if err != nil {
			return nil, total, 0, err
		}
		if i >= sampled {
			u.SetCol(i, mat.Col(nil, 0, nb))
			continue
		}
		beta, err = acct.SpendExponential(fmt.Sprintf("vector %d (exponential mechanism)", i+1), 1, eps/float64(sampled))
		if err != nil {
			return nil, total, 0, err
		}
		x, dg, err := sampleInSubspace(ctx, rnd, a, nb, beta, be)
		if err != nil {
			return nil, total, 0, err
		}
		total.Draws += dg.Draws
		total.Proposals += dg.Proposals
		total.Dim = d
		u.SetCol(i, x)
	}
	if total.Proposals > 0 {
		total.AcceptanceRate = float64(total.Draws) / float64(total.Proposals)
	}
	return u, total, beta, nil
}

// Gauss is the Gaussian mechanism on A ("Analyze Gauss"): release the top-k
// eigenvectors of A + E, E symmetric Gaussian.
type Gauss struct{}

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
			"σ is set from the zCDP budget (default), or classically (ε ≤ 1 only) or analytically (Balle & Wang 2018) from (ε, δ).",
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
	a, clipped, err := rowsMatrix(ctx, run.Data, p.Float("clip"), run.Backend)
	if err != nil {
		return nil, err
	}
	gamma, _, err := run.Backend.EigSym(a)
	if err != nil {
		return nil, fmt.Errorf("eigenvalues of A: %w", err)
	}
	const name = "A + E (Gaussian mechanism)"
	dim := d * (d + 1) / 2
	var sigma float64
	if cal == GaussZCDP {
		rho, err := run.Acct.TotalRho()
		if err != nil {
			return nil, err
		}
		sigma, err = run.Acct.SpendGaussianRho(name, math.Sqrt2, dim, rho)
		if err != nil {
			return nil, err
		}
	} else {
		sigma, err = run.Acct.SpendGaussianEpsDelta(name, math.Sqrt2, dim, g.Epsilon, g.Delta, cal)
		if err != nil {
			return nil, err
		}
	}
	noisy := noisyCopy(run.Rand, a, sigma)
	vals, vecs, err := run.Backend.EigSymTop(noisy, k)
	if err != nil {
		return nil, fmt.Errorf("eigenvectors of A + E: %w", err)
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
	a, _, err := rowsMatrix(ctx, run.Data, p.Float("clip"), run.Backend)
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

func columnsBelow(i int) []int {
	out := make([]int, i)
	for j := range out {
		out[j] = j
	}
	return out
}

// complementBasis returns a d×(d−len(cols)) orthonormal basis of the
// orthogonal complement of the given orthonormal columns of u: the
// eigenvectors of I − Σ u_c u_cᵀ with eigenvalue 1.
func complementBasis(u *mat.Dense, cols []int, be backend.Backend) (*mat.Dense, error) {
	d, _ := u.Dims()
	proj := mat.NewSymDense(d, nil)
	for r := 0; r < d; r++ {
		for c := r; c < d; c++ {
			v := 0.0
			if r == c {
				v = 1
			}
			for _, t := range cols {
				v -= u.At(r, t) * u.At(c, t)
			}
			proj.SetSym(r, c, v)
		}
	}
	_, vecs, err := be.EigSym(proj)
	if err != nil {
		return nil, fmt.Errorf("complement basis: %w", err)
	}
	return mat.DenseCopyOf(vecs.Slice(0, d, 0, d-len(cols))), nil
}

// sampleInSubspace draws a unit vector x = N z in the span of the
// orthonormal columns of nb with density ∝ exp(beta·xᵀAx), exactly
// (vector Bingham with matrix NᵀAN).
func sampleInSubspace(ctx context.Context, rnd *privacy.Source, a mat.Symmetric, nb *mat.Dense, beta float64, be backend.Backend) ([]float64, bingham.Diagnostics, error) {
	d, m := nb.Dims()
	var an mat.Dense
	if err := be.Mul(&an, a, false, nb, false); err != nil {
		return nil, bingham.Diagnostics{}, err
	}
	var nan mat.Dense
	if err := be.Mul(&nan, nb, true, &an, false); err != nil {
		return nil, bingham.Diagnostics{}, err
	}
	sub := mat.NewSymDense(m, nil)
	for r := 0; r < m; r++ {
		for c := r; c < m; c++ {
			sub.SetSym(r, c, (nan.At(r, c)+nan.At(c, r))/2)
		}
	}
	s, err := bingham.New(sub, beta, be)
	if err != nil {
		return nil, bingham.Diagnostics{}, err
	}
	z, dg, err := s.Sample(ctx, rnd)
	if err != nil {
		return nil, dg, err
	}
	x := make([]float64, d)
	for r := 0; r < d; r++ {
		var v float64
		for c := 0; c < m; c++ {
			v += nb.At(r, c) * z[c]
		}
		x[r] = v
	}
	return x, dg, nil
}

// noisyCopy returns A + E: a copy of A whose upper triangle is rounded to
// the noise grid and noised there, like every other Gaussian release (the
// declared sensitivity already includes the rounding).
func noisyCopy(rnd *privacy.Source, a *mat.SymDense, sigma float64) *mat.SymDense {
	out := mat.NewSymDense(a.SymmetricDim(), nil)
	out.CopySym(a)
	rnd.AddSymmetricGaussian(out, sigma)
	return out
}
