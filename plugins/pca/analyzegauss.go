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
		Options:   analyzeGaussOptions{},
		References: []string{
			"C. Dwork, K. Talwar, A. Thakurta, L. Zhang. Analyze Gauss: optimal bounds for privacy-preserving principal component analysis. STOC 2014.",
		},
	}
}

// Fit implements sdk.Estimator: bind → plan → Analyze Gauss.
func (AnalyzeGauss) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[analyzeGaussOptions](run)
	x, n, _, err := rowsData(run.Data)
	if err != nil {
		return nil, err
	}
	plan, err := analyzeGaussPlan(run, o)
	if err != nil {
		return nil, err
	}
	var mu []float64
	if o.private() {
		if mu, err = privateMeanGaussian(ctx, run, plan, x, o.meanClip(o.Clip.Value)); err != nil {
			return nil, err
		}
	}
	run.Progress("gram", 0, 1)
	sh, nClip, err := Gram(ctx, run.Backend, x, mu, o.Clip.Value)
	if err != nil {
		return nil, err
	}
	run.Progress("gram", 1, 1)
	if err := checkGram(sh, x); err != nil {
		return nil, err
	}
	res, err := analyzeGauss(ctx, run, plan, sh, n, o)
	if err != nil {
		return nil, err
	}
	res.AddScalar("clipped_rows", float64(nClip), sdk.Evaluation, "rows shrunk by the clip (computed from raw data: do not publish)")
	return withEvaluation(ctx, run, res, o.Evaluate.Value)
}

// analyzeGaussPlan splits the grant between the optional private mean and
// the second-moment release, under the requested noise calibration.
func analyzeGaussPlan(run *sdk.Run, o *analyzeGaussOptions) (*privacy.Plan, error) {
	if o.private() {
		return sdk.NewPlan(run, o.noise,
			privacy.Share{Name: shareMean, Weight: o.MeanShare, Mechanism: privacy.MechGaussian},
			privacy.Share{Name: shareMoment, Weight: 1 - o.MeanShare, Mechanism: privacy.MechGaussian})
	}
	return sdk.NewPlan(run, o.noise, privacy.Share{Name: shareMoment, Weight: 1, Mechanism: privacy.MechGaussian})
}

// AnalyzeGaussFromCov runs pca-analyze-gauss on a precomputed clipped
// second-moment matrix Σ̂_γ = Σ x_ix_iᵀ/n of n rows with ‖x_i‖ ≤ clip (run
// needs only Acct, Rand and Backend; raw is the request, bound here against
// the estimator's options). The worst-case guarantee holds only if the
// caller really clipped the rows. center=private is refused.
func AnalyzeGaussFromCov(ctx context.Context, run *sdk.Run, raw map[string]string, sh *mat.SymDense, n int) (*sdk.Result, error) {
	if sh == nil || n < 1 {
		return nil, fmt.Errorf("AnalyzeGaussFromCov: need a covariance and n ≥ 1")
	}
	opts, _, err := sdk.Prepare(AnalyzeGauss{}.Info(), raw, sdk.Shape{Kind: data.Rows, N: n, P: sh.SymmetricDim()})
	if err != nil {
		return nil, err
	}
	o := opts.(*analyzeGaussOptions)
	if o.private() {
		return nil, fmt.Errorf("center=private needs the data rows")
	}
	plan, err := analyzeGaussPlan(run, o)
	if err != nil {
		return nil, err
	}
	cp := mat.NewSymDense(sh.SymmetricDim(), nil)
	cp.CopySym(sh)
	if err := checkGram(cp, nil); err != nil {
		return nil, err
	}
	return analyzeGauss(ctx, run, plan, cp, n, o)
}

// analyzeGauss is the mechanism (DERIVATIONS.md §4): release Σ̂_γ + E with
// Frobenius sensitivity √2γ²/n and return its top-r eigenpairs.
func analyzeGauss(ctx context.Context, run *sdk.Run, plan *privacy.Plan, sh *mat.SymDense, n int, o *analyzeGaussOptions) (*sdk.Result, error) {
	p := sh.SymmetricDim()
	b, err := plan.Budget(shareMoment)
	if err != nil {
		return nil, err
	}
	sens := AnalyzeGaussSensitivity(o.Clip.Value, n)
	rel, err := run.Acct.Gaussian("second-moment matrix Σ̂ + E", sens, analyzegauss.Dim(p), b)
	if err != nil {
		return nil, err
	}
	noisy, vals, u, err := analyzegauss.Release(ctx, run.Backend, run.Rand, rel, sh, o.Rank.Value)
	if err != nil {
		return nil, err
	}
	res := &sdk.Result{}
	res.AddMatrix("U", u, sdk.Public, "private top-r eigenvectors (p×r, orthonormal)")
	res.AddSeries("eigenvalues", append([]float64(nil), vals...), sdk.Public, "top-r eigenvalues of the noisy second-moment matrix, descending")
	if o.OutputSigma {
		res.AddMatrix("Sigma", symToDense(noisy), sdk.Public, "the released noisy second-moment matrix Σ̂_γ + E (p×p)")
	}
	res.AddScalar("sensitivity", sens, sdk.Public, "Frobenius sensitivity √2·clip²/n")
	res.AddScalar("noise_sd", rel.Scale(), sdk.Public, "standard deviation of each noise entry")
	res.Guarantee = privacy.Guarantee{
		Neighbours:  "one row replaced by an arbitrary row",
		Assumptions: []string{fmt.Sprintf("the clip γ = %.6g was chosen without looking at the data", o.Clip.Value)},
	}
	if o.private() {
		res.Guarantee.Assumptions = append(res.Guarantee.Assumptions, fmt.Sprintf("mean clip %.6g chosen without looking at the data", o.meanClip(o.Clip.Value)))
	}
	if o.note != "" {
		res.Notes = append(res.Notes, o.note)
	}
	return res, nil
}
