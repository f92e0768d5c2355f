package pca

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/analyzegauss"
	"github.com/dplr/dplr/plugins/internal/pcaeval"
	"github.com/dplr/dplr/plugins/internal/project"
)

// AnalyzeGauss is pca-analyze-gauss, the Analyze Gauss mechanism of Dwork,
// Talwar, Thakurta and Zhang (2014) on clipped rows (DERIVATIONS.md §4).
type AnalyzeGauss struct{ project.Projection }

// Info implements sdk.Estimator.
func (AnalyzeGauss) Info() sdk.Info {
	return sdk.Info{
		Name:    "pca-analyze-gauss",
		Version: Version,
		Summary: "Analyze Gauss: Gaussian noise on the clipped second-moment matrix, worst-case (ε,δ)-DP",
		Description: `The recommended private PCA for most data: it finds the r directions along which
your rows vary most, with worst-case (ε, δ)-differential privacy and no assumption on the data.

How it works, in plain words: every row longer than the clip is shortened to the clip (so no
single person can move the result much), the matrix Σ x_i x_iᵀ/n of the shortened rows gets
random Gaussian noise, and the top-r eigenvectors of the noisy matrix are the components U.

What you need to choose: only rank (and the budget). The defaults do the rest privately:
noise=exact calibrates the Gaussian noise by the tightest accounting dplr certifies (with a
numeric clip the plan is Gaussian only and the exact Gaussian-DP curve gives about 7 % less noise
than zero-concentrated DP, noise=zcdp, at ε = 1, δ = 1e-6; with clip=auto the pure quantile step
joins through the privacy loss distribution and σ is about 6 % below zCDP's; the result's
guarantee names the accountant that produced its figures);
clip=auto spends 10 % of the budget (clip_share; up to 30 % on a few hundred rows, where 10 %
cannot find the median) on a private median of the row norms and uses it as the clip (released
as output clip); center=private subtracts a privately estimated mean
first (released as output mean, so dplr transform can project new rows). A clip you give yourself
must be chosen without looking at the data; the largest possible row norm is always safe but
usually adds far more noise than needed.

Tables whose columns are in different units: give public per-column scales (--column-scales), use
center=pairs up to a few thousand rows, and add feature_scale=released (correlation PCA of the
released matrix, no extra budget) once n·ε reaches several thousand (bench/results/tables.md).

When it works: when n·ε is large against the dimension p (on Fashion-MNIST, n = 60000 and
p = 784, it keeps about 99 % of the non-private captured variance at ε = 1 and about 97 % at
ε = 0.5). Outputs: U, eigenvalues, explained_variance_ratio (private estimates), clip, and mean
with center=private. Sensitivity √2·clip²/n (Frobenius, one row replaced); derivations in
DERIVATIONS.md §4–§7.`,
		DataKind:  data.Rows,
		Guarantee: "worst-case (ε,δ)-DP (or ρ-zCDP); neighbours replace one row by any row; rows clipped to the clip (public, or a private quantile with clip=auto)",
		Grants:    []privacy.GrantKind{privacy.GrantApprox, privacy.GrantZCDP},
		Options:   analyzeGaussOptions{},
		References: []string{
			"C. Dwork, K. Talwar, A. Thakurta, L. Zhang. Analyze Gauss: optimal bounds for privacy-preserving principal component analysis. STOC 2014.",
		},
	}
}

// Fit implements sdk.Estimator: private preprocessing (clip quantiles,
// mean) → Analyze Gauss, spending run.Plan (the run's own, or a private
// selection's view of its plan).
func (AnalyzeGauss) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[analyzeGaussOptions](run)
	plan := run.Plan
	src, _, _, err := sourceOf(run.Data)
	if err != nil {
		return nil, err
	}
	pre, err := preprocess(ctx, run, plan, src, &o.clipOptions, &o.centerOptions)
	if err != nil {
		return nil, err
	}
	res, scale, err := analyzeGauss(ctx, run, plan, pre.gram, pre.n, pre.clip, o)
	if err != nil {
		return nil, err
	}
	if scale != nil && pre.mu != nil { // transform divides by feature_scale, then subtracts the mean
		pre.mu = append([]float64(nil), pre.mu...)
		pcaeval.DivideMoments(scale, pre.mu, nil)
	}
	pre.report(res)
	return withEvaluation(ctx, run, res, o.Evaluate.Value)
}

// Plan implements sdk.Planner: the grant split between the private
// preprocessing and the second-moment release; feature_scale=private is
// refused when it cannot locate any column's scale.
func (o *analyzeGaussOptions) Plan(s sdk.Shape, g privacy.Grant) (sdk.PlanSpec, error) {
	shares, rest := newPrepPlan(s, &o.clipOptions, &o.centerOptions, privacy.MechGaussian).sized(&o.clipOptions, s.N, g, false).shares(privacy.MechGaussian)
	spec := sdk.PlanSpec{Noise: o.Noise.Value, Shares: append(shares, privacy.Share{Name: shareMoment, Weight: rest, Mechanism: privacy.MechGaussian})}
	return spec, o.checkScalesLocatable(s, g, spec.New)
}

// AnalyzeGaussFromCov runs pca-analyze-gauss on a precomputed clipped
// second-moment matrix Σ̂_γ = Σ x_ix_iᵀ/n of n rows with ‖x_i‖ ≤ clip (run
// needs only Acct, Rand and Backend; raw is the request, bound here against
// the estimator's options). The worst-case guarantee holds only if the
// caller really clipped the rows. center=private is refused.
func AnalyzeGaussFromCov(ctx context.Context, run *sdk.Run, raw map[string]string, sh *mat.SymDense, n int) (*sdk.Result, error) {
	opts, err := bindCov(AnalyzeGauss{}.Info(), raw, sh, n)
	if err != nil {
		return nil, err
	}
	o := opts.(*analyzeGaussOptions)
	if o.private() || o.scaled() {
		return nil, fmt.Errorf("center=private and feature_scale=private need the data rows")
	}
	if o.Auto() {
		return nil, fmt.Errorf("clip=auto needs the data rows: give the clip the rows were clipped to")
	}
	plan, err := sdk.PlanFor(o, sdk.Shape{Kind: data.Rows, N: n}, run.Acct)
	if err != nil {
		return nil, err
	}
	cp := mat.NewSymDense(sh.SymmetricDim(), nil)
	cp.CopySym(sh)
	res, _, err := analyzeGauss(ctx, run, plan, cp, n, o.clipOptions.Value(), o)
	if err != nil {
		return nil, err
	}
	(&preprocessed{clip: o.clipOptions.Value()}).report(res)
	return res, nil
}

// analyzeGauss is the mechanism (DERIVATIONS.md §4): release Σ̂_γ + E with
// Frobenius sensitivity √2γ²/n and return its top-r eigenpairs.
func analyzeGauss(ctx context.Context, run *sdk.Run, plan *privacy.Plan, sh *mat.SymDense, n int, clip float64, o *analyzeGaussOptions) (*sdk.Result, []float64, error) {
	p := sh.SymmetricDim()
	sens := kernel.MomentSensitivity(clip, 1/float64(n)) // √2·γ²/n, DERIVATIONS.md §4
	rel, err := releaseAt(run, plan, shareMoment, "second-moment matrix Σ̂ + E", sens, analyzegauss.Dim(p))
	if err != nil {
		return nil, nil, err
	}
	noisy, vals, u, scale, err := analyzegauss.Release(ctx, run.Backend, run.Rand, rel, sh, o.Rank.Value, o.released())
	if err != nil {
		return nil, nil, err
	}
	res := &sdk.Result{}
	res.AddMatrix("U", u, sdk.Public, "private top-r eigenvectors (p×r, orthonormal; with feature_scale=released, of the released matrix standardised by its diagonal)")
	res.AddSeries("eigenvalues", append([]float64(nil), vals...), sdk.Public, "top-r eigenvalues of the noisy second-moment matrix (of the centred rows with center=private; standardised with feature_scale=released), descending: private estimates of the component variances of the clipped rows")
	if evr, ok := pcaeval.ExplainedRatio(vals, analyzegauss.RestOfTrace(noisy, vals)); ok {
		res.AddSeries("explained_variance_ratio", evr, sdk.Public, "eigenvalues / trace of the noisy matrix (negative values counted as 0): a private estimate of the share of the (clipped) variance each component explains (post-processing)")
	}
	if scale != nil {
		res.AddMatrix(pcaeval.FeatureScaleName, mat.NewDense(1, len(scale), scale), sdk.Public,
			"feature_scale=released: the square roots of the released matrix's diagonal, floored at twice the noise deviation (post-processing, no budget); dplr transform divides new rows by them before subtracting the released mean")
	}
	if o.OutputSigma {
		res.AddMatrix("Sigma", mat.DenseCopyOf(noisy), sdk.Public, "the released noisy second-moment matrix Σ̂_γ + E (p×p; with feature_scale=released, divided by feature_scale on both sides)")
	}
	res.AddScalar("sensitivity", sens, sdk.Public, "Frobenius sensitivity √2·clip²/n")
	res.AddScalar("noise_sd", rel.Scale(), sdk.Public, "standard deviation of each noise entry")
	res.Guarantee = privacy.Guarantee{Neighbours: "one row replaced by an arbitrary row"}
	res.Notes = append(res.Notes, privacy.GaussianNote(o.Noise.Value, run.Acct.Grant().Kind))
	return res, scale, nil
}

// Passes implements sdk.RemoteEstimator.
func (AnalyzeGauss) Passes(opts any, _ sdk.Shape) ([]string, error) {
	o := opts.(*analyzeGaussOptions)
	return remotePasses(&o.clipOptions, &o.centerOptions, &o.evaluation)
}

// PCA's part in the SDK's private selection (sdk.Selection): the units are
// rows; a candidate is fitted on the fitting rows and scored on each
// held-out row x by the fraction of it the released components capture,
// ‖Ûᵀy‖²/‖y‖² with y = x/feature_scale − mean as dplr transform prepares
// it (1 for y = 0). Û is orthonormal, so the score is in [0, 1], and it
// depends on its own row only: the mean over m held-out rows moves by at
// most 1/m when one row is replaced.

// SelectFit implements sdk.Selectable for pca-analyze-gauss.
func (AnalyzeGauss) SelectFit(ctx context.Context, run *sdk.Run) (*sdk.Result, sdk.Scorer, error) {
	res, err := AnalyzeGauss{}.Fit(ctx, run)
	if err != nil {
		return nil, nil, err
	}
	return res, capturedScorer(res, run.Params.Raw()), nil
}

// capturedScorer scores held-out rows by the mean over them of the
// fraction of each row (prepared as transform prepares it) that the
// components of res capture, in [0, 1] per row (1 for a zero row).
func capturedScorer(res *sdk.Result, params map[string]string) sdk.Scorer {
	m := modelOf(res, params)
	return func(ctx context.Context, held *data.Dataset) (float64, error) {
		y, u, err := project.Prepared(m, held.X)
		if err != nil {
			return 0, err
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		n, _ := y.Dims()
		var proj mat.Dense
		proj.Mul(y, u)
		var sum float64
		for i := 0; i < n; i++ {
			row, pr := y.RawRowView(i), proj.RawRowView(i)
			if total := floats.Dot(row, row); total > 0 {
				sum += min(floats.Dot(pr, pr)/total, 1)
			} else {
				sum++
			}
		}
		return sum / float64(n), nil
	}
}

// modelOf is the model dplr transform reads from res: its public matrices.
func modelOf(res *sdk.Result, params map[string]string) *sdk.Model {
	m := &sdk.Model{Params: params}
	for _, o := range res.Matrices {
		if o.Release == sdk.Public {
			r, c := o.M.Dims()
			m.Outputs = append(m.Outputs, sdk.ModelOutput{Name: o.Name, Rows: r, Cols: c, Value: o.M.RawMatrix().Data})
		}
	}
	return m
}
