// Package orbit implements differentially private matrix approximation on
// orthogonal orbits (Mangoubi, Wu, Kale, Thakurta & Vishnoi, "Private Matrix
// Approximation and Geometry of Unitary Orbits"): given A = Σ x_u x_uᵀ built
// from rows of norm ≤ 1, release H = U Λ Uᵀ maximising ⟨A, H⟩ over the
// orbit of a target spectrum Λ. Rank-k PCA (Λ a projection), rank-k
// approximation (Λ the private top-k eigenvalues, Algorithm 2) and general
// public spectra are the same mechanism with different Λ.
//
// The paper proves bounds but relies on a complex-unitary sampler without
// constants; this package samples the real orbit instead:
//   - k = 1: the exact angular-central-Gaussian rejection sampler of
//     plugins/internal/bingham (pure ε-DP, exact);
//   - k > 1: a Givens–Gibbs sampler on SO(d) whose pair updates are exact
//     von Mises draws, run for a fixed, data-independent number of sweeps.
//     Its stationary law is the ε-DP exponential mechanism, but a finite
//     run is not certified, so results carry a Nominal guarantee.
//
// Baselines: iterative deflation, the Gaussian mechanism on A and the
// non-private top-k eigenvectors. Rows are clipped to a public norm and
// A = Σ x̃ x̃ᵀ / clip², so every user contributes trace ≤ 1 as the paper
// assumes. DERIVATIONS.md derives every sensitivity, algorithm and bound.
package orbit

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	rowclip "github.com/dplr/dplr/plugins/internal/clip"
	"github.com/dplr/dplr/plugins/internal/rowsrc"
)

// Version is the version of every estimator in this plugin.
const Version = "0.1.0"

// Estimators returns every estimator the orbit plugin serves.
func Estimators() []sdk.Estimator {
	return []sdk.Estimator{
		EM{},
		RankK{},
		Deflation{},
		Gauss{},
		NonPrivate{},
	}
}

// References cited by the plugin's catalogue entries.
var (
	refMangoubi = "O. Mangoubi, Y. Wu, S. Kale, A. Thakurta, N. K. Vishnoi. Private Matrix Approximation and Geometry of Unitary Orbits. 2022 (arXiv:2207.02794)."
	refKGM      = "J. T. Kent, A. M. Ganeiber, K. V. Mardia. A new unified approach for the simulation of a wide class of directional distributions. JCGS 27(2), 2018."
	refAmin     = "K. Amin, T. Dick, A. Kulesza, A. Muñoz Medina, S. Vassilvitskii. Differentially private covariance estimation. NeurIPS 2019."
	refDTTZ     = "C. Dwork, K. Talwar, A. Thakurta, L. Zhang. Analyze Gauss: optimal bounds for privacy-preserving principal component analysis. STOC 2014."
	refBF       = "D. J. Best, N. I. Fisher. Efficient simulation of the von Mises distribution. Applied Statistics 28(2), 1979."
	refCSS      = "K. Chaudhuri, A. D. Sarwate, K. Sinha. A near-optimal algorithm for differentially-private principal components. JMLR 14, 2013."
)

// neighboursReplace describes the neighbouring relation of the paper.
const neighboursReplace = "one user's row replaced (rows clipped to norm ≤ clip)"

// ClippedMatrix clips the rows of ds to norm ≤ clip and returns
// A = Σ x̃x̃ᵀ/clip² (every row contributes a PSD rank-one term of trace ≤ 1)
// and the number of rows the clip shrank (a data-dependent count:
// evaluation only), through the clipped second-moment pass (in process
// for rows in memory). It is the matrix every orbit estimator starts
// from, exported for the studies.
func ClippedMatrix(ctx context.Context, ds *data.Dataset, clip float64) (*mat.SymDense, int, error) {
	src, err := rowsrc.Of(ds)
	if err != nil {
		return nil, 0, err
	}
	return clippedMatrix(ctx, src, clip)
}

// parseSpectrum reads a public spectrum parameter for rank k.
func parseSpectrum(s string, k int) ([]float64, error) {
	if s == "" || s == "projection" {
		out := make([]float64, k)
		for i := range out {
			out[i] = 1
		}
		return out, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) == 1 && k > 1 {
		if _, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err != nil {
			return nil, sdk.BadRequest("spectrum %q: want \"projection\" or %d comma-separated numbers", s, k)
		}
	}
	if len(parts) != k {
		return nil, sdk.BadRequest("spectrum lists %d values but rank is %d", len(parts), k)
	}
	out := make([]float64, k)
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, sdk.BadRequest("spectrum value %d (%q) is not a finite number", i+1, p)
		}
		if v < 0 {
			return nil, sdk.BadRequest("spectrum value %d = %v is negative (the score's sensitivity bound needs λ ≥ 0)", i+1, v)
		}
		if i > 0 && v > out[i-1] {
			return nil, sdk.BadRequest("spectrum must be non-increasing: value %d = %v exceeds value %d = %v", i+1, v, i, out[i-1])
		}
		out[i] = v
	}
	if !(out[0] > 0) {
		return nil, sdk.BadRequest("spectrum's largest value must be positive")
	}
	return out, nil
}

// checkRank validates k against d.
func checkRank(k, d int) error {
	if k < 1 || k > d {
		return sdk.BadRequest("rank %d must lie in [1, d = %d]", k, d)
	}
	return nil
}

// Score returns ⟨A, U diag(λ) Uᵀ⟩ = Σ_i λ_i u_iᵀ A u_i for the d×k frame u.
func Score(a mat.Symmetric, u mat.Matrix, lambda []float64) float64 {
	d, k := u.Dims()
	var s float64
	col := mat.NewVecDense(d, nil)
	for i := 0; i < k && i < len(lambda); i++ {
		if lambda[i] == 0 {
			continue
		}
		for r := 0; r < d; r++ {
			col.SetVec(r, u.At(r, i))
		}
		s += lambda[i] * mat.Inner(col, a, col)
	}
	return s
}

// Optimum returns OPT = Σ_i λ_i γ_i for the eigenvalues γ of A (descending).
func Optimum(gamma, lambda []float64) float64 {
	var s float64
	for i := range lambda {
		s += lambda[i] * gamma[i]
	}
	return s
}

// addCommonOutputs releases U and Λ and, with evaluate=true, the
// evaluation-only utility figures.
// rel labels U and Λ: sdk.Public for the private estimators, sdk.Evaluation
// for the non-private reference, whose frame is computed from the raw data.
func addCommonOutputs(res *sdk.Result, pr *problem, u *mat.Dense, lambda []float64, rel sdk.Release) {
	a, gamma := pr.a, pr.gamma
	k := len(lambda)
	uDoc := "d×k orthonormal frame; H = U diag(Lambda) Uᵀ is the released orbit point"
	lDoc := "released target spectrum λ_1 ≥ … ≥ λ_k ≥ 0 (normalised scale A = Σ x̃x̃ᵀ/clip²)"
	if rel == sdk.Evaluation {
		const np = "EVALUATION ONLY (computed from the raw data, NOT private): "
		uDoc, lDoc = np+uDoc, np+"target spectrum λ_1 ≥ … ≥ λ_k ≥ 0 (normalised scale A = Σ x̃x̃ᵀ/clip²)"
	}
	res.AddMatrix("U", u, rel, uDoc)
	res.AddMatrix("Lambda", mat.NewDense(k, 1, slices.Clone(lambda)), rel, lDoc)
	clipDoc := "row-norm bound used (given by the user)"
	if pr.autoClip {
		clipDoc = "row-norm bound used: a private quantile of the row norms (clip=auto), released"
	}
	res.AddScalar("clip", pr.clip, rel, clipDoc)
	if !pr.eval {
		return
	}
	score := Score(a, u, lambda)
	opt := Optimum(gamma, lambda)
	const ev = "EVALUATION ONLY (computed from the raw data, not private): "
	res.AddScalar("utility", score, sdk.Evaluation, ev+"⟨A, H⟩")
	res.AddScalar("optimum", opt, sdk.Evaluation, ev+"max over the orbit, Σ λ_i γ_i")
	res.AddScalar("loss", opt-score, sdk.Evaluation, ev+"OPT − ⟨A, H⟩ ≥ 0")
	relUtil := math.NaN()
	if opt > 0 {
		relUtil = score / opt
	}
	res.AddScalar("relative_utility_uncentred", relUtil, sdk.Evaluation, ev+"⟨A, H⟩ / OPT on the clipped UNCENTRED A (for spectrum=projection: the uncentred captured-variance ratio of the clipped rows)")
	var fa, fl float64
	ar := a.RawSymmetric()
	for i := 0; i < ar.N; i++ {
		for j := 0; j < ar.N; j++ {
			v := a.At(i, j)
			fa += v * v
		}
	}
	for _, l := range lambda {
		fl += l * l
	}
	res.AddScalar("frobenius_error_sq", fa+fl-2*score, sdk.Evaluation, ev+"‖A − H‖_F² = ‖A‖_F² + Σλ² − 2⟨A, H⟩")
}

// problem is what every orbit estimator computes before its mechanism:
// the clipped second-moment matrix A with its eigenvalues (descending).
type problem struct {
	a        *mat.SymDense
	gamma    []float64
	clipped  int     // rows shrunk by the clip (evaluation only)
	clip     float64 // the clip used
	autoClip bool    // clip is a private quantile (clip=auto)
	eval     bool    // evaluate=true
}

// newProblem builds A from the rows of src clipped to clip, and its
// eigenvalues. The request has been bound and checked already.
func newProblem(ctx context.Context, run *sdk.Run, src *rowsrc.Source, clip float64) (*problem, error) {
	pr := &problem{clip: clip}
	var err error
	if pr.a, pr.clipped, err = clippedMatrix(ctx, src, clip); err != nil {
		return nil, err
	}
	if pr.gamma, _, err = run.Backend.EigSym(pr.a); err != nil {
		return nil, fmt.Errorf("eigenvalues of A: %w", err)
	}
	return pr, nil
}

// clippedMatrix is ClippedMatrix on a rows source: one clipped
// second-moment pass, checked against the clip's bounds.
func clippedMatrix(ctx context.Context, src *rowsrc.Source, clip float64) (*mat.SymDense, int, error) {
	if !(clip > 0) || math.IsInf(clip, 0) {
		return nil, 0, sdk.BadRequest("clip = %v must be positive and finite", clip)
	}
	a, clipped, err := src.SecondMoment(ctx, nil, clip, 1/(clip*clip))
	if err != nil {
		return nil, 0, fmt.Errorf("clipped second moment: %w", err)
	}
	return a, clipped, nil
}

// spec is the plan of an orbit fit on data of shape s under grant g:
// shares under noise (pure: fractions of ε, planned by
// privacy.NewPurePlan) with, under clip=auto, a first share clip_share
// (its default sized to s.N and g: rowclip.Options.Share) for the private
// norm quantile, the other weights scaled to the rest.
func (o *base) spec(s sdk.Shape, g privacy.Grant, noise string, pure bool, shares ...privacy.Share) sdk.PlanSpec {
	if !o.Options.Auto() {
		return sdk.PlanSpec{Noise: noise, Pure: pure, Shares: shares}
	}
	w := o.Options.Share(s.N, 1, g, pure, 0)
	out := []privacy.Share{{Name: rowclip.ShareName, Weight: w, Mechanism: privacy.MechExponential}}
	for _, sh := range shares {
		sh.Weight *= 1 - w
		out = append(out, sh)
	}
	return sdk.PlanSpec{Noise: noise, Pure: pure, Shares: out}
}

// problemFor is newProblem at the options' clip: the given one, or under
// clip=auto a private clip_quantile-quantile of the row norms released
// first from the plan's clip share (plugins/pca/DERIVATIONS.md §6).
func problemFor(ctx context.Context, run *sdk.Run, plan *privacy.Plan, o *base) (*problem, error) {
	src, err := rowsrc.Of(run.Data) // the rows, or passes over a remote data set
	if err != nil {
		return nil, err
	}
	c := o.Options.Value()
	if o.Options.Auto() {
		if c, err = src.PrivateNorm(ctx, run.Acct, run.Rand, "clip quantile", plan, rowclip.ShareName, nil, o.ClipQuantile); err != nil {
			return nil, err
		}
	}
	pr, err := newProblem(ctx, run, src, c)
	if err != nil {
		return nil, err
	}
	pr.autoClip, pr.eval = o.Options.Auto(), o.Evaluate.Value
	return pr, nil
}

// clipAssumption is the guarantee's assumption about the clip.
func clipAssumption(pr *problem) string {
	if pr.autoClip {
		return fmt.Sprintf("the clip %.6g is a private quantile of the row norms (a declared step)", pr.clip)
	}
	return fmt.Sprintf("the clip %.6g was chosen without looking at the data", pr.clip)
}
