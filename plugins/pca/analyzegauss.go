package pca

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/analyzegauss"
	rowclip "github.com/dplr/dplr/plugins/internal/clip"
)

// AnalyzeGauss is the Analyze Gauss mechanism of Dwork, Talwar, Thakurta and
// Zhang (2014) in its normalised replace-one form: rows are clipped to a
// public norm γ, the second-moment matrix Σ̂_γ = Σ x_ix_iᵀ/n receives a
// symmetric Gaussian matrix whose upper triangle (diagonal included) is
// i.i.d., and the top-r eigenvectors of the noisy matrix are returned.
// Replacing one row changes Σ̂_γ by at most √2·γ²/n in Frobenius norm
// (DERIVATIONS.md §4).
type AnalyzeGauss struct{}

// AnalyzeGaussSensitivity is the replace-one Frobenius sensitivity √2·γ²/n
// of the clipped second-moment matrix (‖xxᵀ − yyᵀ‖_F² = ‖x‖⁴ + ‖y‖⁴ −
// 2(xᵀy)² ≤ 2γ⁴).
func AnalyzeGaussSensitivity(clip float64, n int) float64 {
	return rowclip.MomentSensitivity(clip, 1/float64(n))
}

// Info implements sdk.Estimator.
func (AnalyzeGauss) Info() sdk.Info {
	return sdk.Info{
		Name:    "pca-analyze-gauss",
		Version: Version,
		Summary: "Analyze Gauss: Gaussian noise on the clipped second-moment matrix, worst-case (ε,δ)-DP",
		Description: `Analyze Gauss (Dwork, Talwar, Thakurta, Zhang 2014). Each row is scaled down to the
public norm clip if it is longer; the matrix Σ̂ = Σ x_i x_iᵀ/n plus a symmetric Gaussian matrix
(i.i.d. upper triangle, same variance on the diagonal) is released, and its top-r algebraic
eigenvectors are the principal subspace. The replace-one Frobenius sensitivity is √2·clip²/n.
The guarantee is worst-case DP: it makes no assumption on the data beyond the public clip.
Choose clip without looking at the data. With center=private a clipped Gaussian mean is
subtracted first (its own step) and the centred rows are clipped. Derivations: DERIVATIONS.md §4–5.`,
		DataKind:  data.Rows,
		Guarantee: "worst-case (ε,δ)-DP (or ρ-zCDP); neighbours replace one row by any row; rows clipped to the public norm clip",
		Grants:    []privacy.GrantKind{privacy.GrantApprox, privacy.GrantZCDP},
		Params: append([]sdk.ParamSpec{
			rankSpec(),
			{Name: "clip", Type: sdk.Float, Required: true, Min: sdk.Bound(minPositive), Doc: "public row-norm bound γ (rows longer than γ are scaled to γ)"},
			{Name: "calibration", Type: sdk.String, Default: "zcdp", Choices: []string{"zcdp", "classical", "analytic"}, Doc: "Gaussian calibration: zcdp (composes ρ from the grant), classical (ε ≤ 1 per step), analytic (Balle–Wang)"},
			sigmaSpec(),
		}, centerSpec("Gaussian")...),
		References: []string{
			"C. Dwork, K. Talwar, A. Thakurta, L. Zhang. Analyze Gauss: optimal bounds for privacy-preserving principal component analysis. STOC 2014.",
		},
	}
}

// Fit implements sdk.Estimator.
func (AnalyzeGauss) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	in, err := clippedInputs(run)
	if err != nil {
		return nil, err
	}
	ps := run.Params
	x, n, r, clip := in.x, in.n, in.r, in.clip
	center, mclip, mshare := in.center, in.meanClip, in.meanShare
	shares := []float64{1}
	if center {
		shares = []float64{mshare, 1 - mshare}
	}
	bud, err := newBudget(run.Acct, ps.String("calibration"), shares)
	if err != nil {
		return nil, err
	}
	k := 0
	var mu []float64
	if center {
		if err := checkFinite(x); err != nil {
			return nil, err
		}
		if mu, err = privateMeanGaussian(ctx, run, bud, k, x, mclip); err != nil {
			return nil, err
		}
		k++
	}
	run.Progress("gram", 0, 1)
	sh, nClip, err := Gram(ctx, run.Backend, x, mu, clip)
	if err != nil {
		return nil, err
	}
	run.Progress("gram", 1, 1)
	return analyzeGaussRelease(ctx, run, x, sh, n, r, clip, bud, k, nClip, center, mclip)
}

// AnalyzeGaussFromCov runs pca-analyze-gauss on a precomputed clipped
// second-moment matrix Σ̂_γ = Σ x_ix_iᵀ/n of n rows with ‖x_i‖ ≤ clip
// (run.Data is not read; run.Params must have been validated against
// AnalyzeGauss{}.Info().Params). The worst-case guarantee holds only if the
// caller really clipped the rows. center=private is refused.
func AnalyzeGaussFromCov(ctx context.Context, run *sdk.Run, sh *mat.SymDense, n int) (*sdk.Result, error) {
	if sh == nil || n < 1 {
		return nil, fmt.Errorf("AnalyzeGaussFromCov: need a covariance and n ≥ 1")
	}
	ps := run.Params
	r := ps.Int("rank")
	if err := checkRank(r, sh.SymmetricDim(), false); err != nil {
		return nil, err
	}
	clip := ps.Float("clip")
	if err := finitePositive("clip", clip); err != nil {
		return nil, err
	}
	if ps.String("center") == centerPrivate {
		return nil, fmt.Errorf("center=private needs the data rows")
	}
	bud, err := newBudget(run.Acct, ps.String("calibration"), []float64{1})
	if err != nil {
		return nil, err
	}
	cp := mat.NewSymDense(sh.SymmetricDim(), nil)
	cp.CopySym(sh)
	return analyzeGaussRelease(ctx, run, nil, cp, n, r, clip, bud, 0, 0, false, 0)
}

func analyzeGaussRelease(ctx context.Context, run *sdk.Run, x *mat.Dense, sh *mat.SymDense, n, r int, clip float64, bud *budget, k, nClip int, center bool, mclip float64) (*sdk.Result, error) {
	ps := run.Params
	p := sh.SymmetricDim()
	if err := checkGram(sh, x); err != nil {
		return nil, err
	}
	sens := AnalyzeGaussSensitivity(clip, n)
	rel, err := bud.release(run.Acct, k, "second-moment matrix Σ̂ + E", sens, analyzegauss.Dim(p))
	if err != nil {
		return nil, err
	}
	sd := rel.Scale()
	// Σ̂_γ + E, rounded to the noise grid, and its top-r eigenpairs.
	sh, vals, u, err := analyzegauss.Release(ctx, run.Backend, run.Rand, rel, sh, r)
	if err != nil {
		return nil, err
	}
	res := &sdk.Result{}
	res.AddMatrix("U", u, sdk.Public, "private top-r eigenvectors (p×r, orthonormal)")
	res.AddSeries("eigenvalues", append([]float64(nil), vals...), sdk.Public, "top-r eigenvalues of the noisy second-moment matrix, descending")
	if ps.Bool("output_sigma") {
		res.AddMatrix("Sigma", symToDense(sh), sdk.Public, "the released noisy second-moment matrix Σ̂_γ + E (p×p)")
	}
	res.AddScalar("sensitivity", sens, sdk.Public, "Frobenius sensitivity √2·clip²/n")
	res.AddScalar("noise_sd", sd, sdk.Public, "standard deviation of each noise entry")
	res.AddScalar("clipped_rows", float64(nClip), sdk.Evaluation, "rows shrunk by the clip (computed from raw data: do not publish)")
	res.Guarantee = privacy.Guarantee{
		Neighbours:  "one row replaced by an arbitrary row",
		Assumptions: []string{fmt.Sprintf("the clip γ = %.6g was chosen without looking at the data", clip)},
	}
	if center {
		res.Guarantee.Assumptions = append(res.Guarantee.Assumptions, fmt.Sprintf("mean clip %.6g chosen without looking at the data", mclip))
	}
	return res, nil
}
