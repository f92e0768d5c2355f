package pca

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/pcaeval"
	"github.com/dplr/dplr/plugins/internal/project"
	"github.com/dplr/dplr/plugins/internal/rowsrc"
)

// CXZ calibrations (the sensitivity option); CalWorstCase is the
// worst-case mode (DERIVATIONS.md §13).
const (
	CalExplicit    = "explicit"
	CalPaper       = "paper"
	CalDiverging   = "diverging"
	CalSubGaussian = "subgaussian"
	CalDavisKahan  = "davis-kahan"
	CalWorstCase   = "worst-case"
)

// CXZ is Algorithm 1 of Cai, Xia and Zha, "Optimal Differentially Private
// PCA and Estimation for Spiked Covariance Matrices": Gaussian noise on the
// sample spectral projector ÛÛᵀ gives Ũ, then Gaussian noise on the r×r
// matrix Ũᵀ(Σ̂ − σ²I)Ũ gives Λ̃, and Σ̃ = ŨΛ̃Ũᵀ + σ²I.
type CXZ struct{ project.Projection }

// Info implements sdk.Estimator.
func (CXZ) Info() sdk.Info {
	return sdk.Info{
		Name:    "pca-cxz",
		Version: Version,
		Summary: "Cai–Xia–Zha optimal DP PCA and spiked covariance estimation (privacy w.h.p. over spiked-model data)",
		Description: `In plain words: a PCA whose noise is calibrated to a statistical model of the data, not
to the worst case. It is private ONLY if your rows really are independent draws from a spiked
Gaussian model (a few strong directions with variances σ² + λ_k over isotropic noise σ²). Real
data (images, tables) do not satisfy this: for real data use pca-analyze-gauss (worst-case
guarantee, no model parameters).

You need not invent σ² and λ: by default (sigma2 unset, lambda=auto) estimate_share (20 %) of the
budget buys a private estimate of them (worst-case DP steps on clipped rows: the trace and the
spectrum of the clipped second moment), and the noise is calibrated to conservative confidence
bounds (σ² from above, λ from below), all released (sigma2_estimate, sigma2_upper,
lambda_estimate, lambda_lower, lambda_upper). Those bounds are valid only for spiked-model data;
the failure probability of the bounds is added to β. If you give lambda yourself, give clip too
(a public row-norm bound; rows are clipped to it): a lambda that such rows cannot have (spikes
summing to clip² or more) is refused before any spend. Without clip a given lambda cannot be
checked, and overstating it silently shrinks the noise: the result then carries a warning.

When the private estimate shows that the fit cannot go on (the noise variance is not positive, or
a requested spike does not stand out of the noise) the fit stops before stage 1 as a success: it
releases the estimate, how many spikes stand out (spikes) and their directions (U, from the
estimate's noisy second moment), says why in a note, and is charged only the steps that ran
(worst-case DP; DERIVATIONS.md §12). rank=auto keeps the spikes that stand out (up to max_rank)
and fits them. center=private (the default, as for every PCA estimator) subtracts a private mean
first, clipped to mean_clip, by default a private median of the row norms; say center=none for
data drawn about zero.

Algorithm 1 of Cai, Xia and Zha. Stage 1 adds a symmetric Gaussian matrix to the
p×p sample spectral projector ÛÛᵀ (Û: top-r eigenvectors of Σ̂ = XᵀX/n; centred only with
center=private, clipped only with clip) and returns the top-r algebraic eigenvectors Ũ. Stage 2 adds a symmetric r×r
Gaussian matrix to Ũᵀ(Σ̂ − σ²I)Ũ, giving Λ̃; the covariance estimate is Σ̃ = ŨΛ̃Ũᵀ + σ²I.

The sensitivities are small only because the data are assumed to come from the spiked
Gaussian model Σ = UΛUᵀ + σ²I with public r, σ² and spike bounds λ, and neighbouring data
sets differ by replacing one row with an independent draw from the model. The guarantee
is therefore (ε, δ)-DP with probability ≥ 1−β over such data, not worst-case DP: use
pca-analyze-gauss when the model is in doubt.

sensitivity=worst-case drops the model from the guarantee: with a public clip and an (ε, δ)
grant, a propose-test-release test (ptr_share of ε, half of δ) checks privately that the
eigengap after component r of the clipped second moment is far from below a proposed gap
(ptr_gap, by default half the gap of the private estimate's noisy spectrum); if it passes, both
stages use sensitivities that hold for any data set with that gap, and the result is (ε, δ)-DP
for any data; if not, the fit stops as above, charged only the steps that ran (DERIVATIONS.md
§13). It pays for the guarantee with more noise than the model-based mode.

The sensitivity option chooses how Δ1 and Δ2 are obtained (DERIVATIONS.md §2.2–2.4), noise
how the Gaussian steps are calibrated, and split the share of stage 1.`,
		DataKind:  data.Rows,
		Guarantee: "(ε,δ)-DP w.p. ≥ 1−β over data from the spiked Gaussian model, with r public and σ², λ public or privately estimated bounds; neighbours replace one row by an independent model draw. sensitivity=worst-case: (ε,δ)-DP for any data set (propose-test-release on the eigengap, rows clipped to a public norm)",
		// (ε, δ) grants and ρ grants (the model guarantee then states ρ, and β
		// defaults to 1e-6 since there is no δ to borrow). No pure grant: the
		// mechanism is Gaussian.
		Grants:  []privacy.GrantKind{privacy.GrantApprox, privacy.GrantZCDP},
		Options: cxzOptions{},
		References: []string{
			"T. T. Cai, D. Xia, M. Zha. Optimal differentially private PCA and estimation for spiked covariance matrices.",
			"B. Laurent, P. Massart. Adaptive estimation of a quadratic functional by model selection. Ann. Statist. 2000.",
		},
	}
}

// cxzConfig is the validated configuration of one CXZ fit.
type cxzConfig struct {
	*cxzOptions
	model    SpikedModel
	beta     float64
	safety   float64
	meanClip float64     // 0: a private quantile (mean_clip=auto)
	meanAuto bool        // meanClip came from a private quantile
	gap0     float64     // sensitivity=worst-case: the proposed eigengap (0: auto, until proposed)
	ptr      *ptrOutcome // the eigengap test's outcome, once it ran

	r       int     // the rank
	sub     float64 // σ² subtracted in stage 2 (given, or the point estimate)
	clip    float64 // public row-norm clip (0: none)
	betaEst float64 // failure probability of the estimated bounds
	est     *modelEstimate
}

// Plan implements sdk.Planner: the grant split into the steps [mean],
// [model estimate], stage 1, [stage 2]; with sensitivity=worst-case the
// shares span what the eigengap test leaves, and a request whose test
// cannot pass is refused (cxzConfig.spec).
func (o *cxzOptions) Plan(s sdk.Shape, g privacy.Grant) (sdk.PlanSpec, error) {
	return o.config(g, s.N, s.P).spec(g)
}

// spec is the plan of the configuration under grant g; the worst-case
// mode is refused under a grant that is not (ε, δ), before any spend.
func (c *cxzConfig) spec(g privacy.Grant) (sdk.PlanSpec, error) {
	spec := sdk.PlanSpec{Noise: c.gauss, Shares: c.shares()}
	if !c.worst() {
		return spec, nil
	}
	if g.Kind != privacy.GrantApprox {
		return spec, sdk.BadRequest("sensitivity=worst-case needs an (ε, δ) grant (its eigengap test is (ε, δ)-DP, not pure or zCDP), not a %s grant", g.Kind)
	}
	if err := c.testCanPass(g); err != nil {
		return spec, err
	}
	spec.TestEpsilon, spec.TestDelta = c.ptrCost(g)
	spec.Test = sdk.MechanismUse{Mechanism: privacy.MechLaplace, For: sharePTR}
	return spec, nil
}

// shares lists the plan's shares.
func (c *cxzConfig) shares() []privacy.Share {
	rest := 1.0
	var shares []privacy.Share
	if c.private() {
		mean := c.MeanShare
		if c.meanClip == 0 {
			shares = append(shares, privacy.Share{Name: shareMeanClip, Weight: c.MeanShare * meanClipWeight, Mechanism: privacy.MechExponential})
			mean -= c.MeanShare * meanClipWeight
		}
		shares = append(shares, privacy.Share{Name: shareMean, Weight: mean, Mechanism: privacy.MechGaussian})
		rest -= c.MeanShare
	}
	est, w := c.estimateShares(rest)
	shares = append(shares, est...)
	rest -= w
	if c.PCAOnly {
		shares = append(shares, privacy.Share{Name: shareStage1, Weight: rest, Mechanism: privacy.MechGaussian})
	} else {
		shares = append(shares, privacy.Share{Name: shareStage1, Weight: rest * c.Split, Mechanism: privacy.MechGaussian},
			privacy.Share{Name: shareStage2, Weight: rest * (1 - c.Split), Mechanism: privacy.MechGaussian})
	}
	return shares
}

// sensitivities returns Δ1, Δ2 and the per-bound failure probability.
func (c *cxzConfig) sensitivities() (d1, d2, betaEach float64, err error) {
	betaEach = c.beta
	if !c.PCAOnly {
		betaEach = c.beta / 2
	}
	m := c.model
	switch c.cal {
	case CalExplicit, CalSubGaussian:
		d1 = c.safety * ExplicitDelta1(m, betaEach)
		d2 = c.safety * ExplicitDelta2(m, betaEach)
	case CalPaper:
		d1, d2 = PaperDelta1(m, c.C2), PaperDelta2(m, c.C3)
	case CalDiverging:
		d1, d2 = DivergingDelta1(m, c.C2), PaperDelta2(m, c.C3)
	case CalDavisKahan:
		d1, err = DavisKahanDelta1(m, betaEach, c.DKC)
		d1 *= c.safety
		d2 = c.safety * ExplicitDelta2(m, betaEach)
	case CalWorstCase:
		if !(c.gap0 > 0) {
			return 0, 0, 0, fmt.Errorf("worst-case sensitivities need a positive proposed gap (ptr_gap), got %v", c.gap0)
		}
		d1, d2 = WorstCaseDelta1(m.N, c.r, c.clip, c.gap0), WorstCaseDelta2(m.N, c.r, c.clip)
		betaEach = 0
	default:
		err = sdk.BadRequest("unknown calibration %q", c.cal)
	}
	return d1, d2, betaEach, err
}

// conditionNotes checks the paper's standing conditions with C1 = 1.
func conditionNotes(m SpikedModel) []string {
	var out []string
	n, p, r := float64(m.N), float64(m.P), float64(m.r())
	ln := math.Log(n)
	if n < r*ln+ln*ln {
		out = append(out, fmt.Sprintf("sample-size condition n ≥ r·log n + log² n fails (n = %.0f < %.0f, C1 = 1)", n, r*ln+ln*ln))
	}
	if 2*r+ln > p {
		out = append(out, fmt.Sprintf("dimension condition 2r + log n ≤ p fails (%.1f > %.0f, C1 = 1)", 2*r+ln, p))
	}
	if snr, need := m.lambdaMinLow()/m.Sigma2, p/n+math.Sqrt(p/n); snr < need {
		out = append(out, fmt.Sprintf("SNR condition λ/σ² ≥ p/n + √(p/n) fails (%.4g < %.4g, C1 = 1): no estimator is consistent here", snr, need))
	}
	return out
}

// Fit implements sdk.Estimator: bind → plan → Algorithm 1.
func (CXZ) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[cxzOptions](run)
	src, n, p, err := sourceOf(run.Data) // the rows, or passes over a remote data set
	if err != nil {
		return nil, err
	}
	res, err := fitCXZ(ctx, run, o, src, nil, n, p)
	if err != nil || !hasU(res) {
		return res, err
	}
	return withEvaluation(ctx, run, res, o.Evaluate.Value)
}

// CXZFromCov runs pca-cxz on a precomputed second-moment matrix
// Σ̂ = XᵀX/n of n rows (run needs only Acct, Rand and Backend; raw is the
// request, bound here against the estimator's options). It serves studies
// that sample Σ̂ directly (e.g. with a Wishart sampler) at sizes where
// materialising X is impractical. center=private, guarded and
// sensitivity=worst-case need the rows and are refused.
func CXZFromCov(ctx context.Context, run *sdk.Run, raw map[string]string, sh *mat.SymDense, n int) (*sdk.Result, error) {
	opts, err := bindCov(CXZ{}.Info(), raw, sh, n)
	if err != nil {
		return nil, err
	}
	return fitCXZ(ctx, run, opts.(*cxzOptions), nil, sh, n, sh.SymmetricDim())
}

// fitCXZ plans the budget and runs Algorithm 1 on the rows of src (or on Σ̂
// when src is nil). A decision made from the private model estimate alone
// that the fit cannot go on is a planned stop (DERIVATIONS.md §12): the
// result then holds what was released, and the run is charged the steps
// that ran.
func fitCXZ(ctx context.Context, run *sdk.Run, o *cxzOptions, src *rowsrc.Source, sh *mat.SymDense, n, p int) (*sdk.Result, error) {
	cfg := o.config(run.Acct.Grant(), n, p)
	plan := run.Plan
	if plan == nil { // a fit from a given second moment plans here, before any step
		var err error
		if plan, err = sdk.PlanFor(o, sdk.Shape{Kind: data.Rows, N: n, P: p}, run.Acct); err != nil {
			return nil, err
		}
	}
	if src == nil && (cfg.private() || cfg.Guarded || cfg.estimate || cfg.worst()) {
		return nil, fmt.Errorf("center=private, guarded, sensitivity=worst-case (rows clipped to clip) and the private estimate of σ² and λ (sigma2 unset or lambda=auto) need the data rows")
	}
	var d1, d2, betaEach float64
	var err error
	if !cfg.estimate { // refuse an unusable calibration before any step
		if d1, d2, betaEach, err = cfg.sensitivities(); err != nil {
			return nil, err
		}
	}
	var mu []float64
	if cfg.private() {
		if mu, err = cfg.privateMean(ctx, run, plan, src); err != nil {
			return nil, err
		}
	}
	if cfg.estimate {
		if cfg.est, err = estimateModel(ctx, run, plan, cfg, src, mu); err != nil {
			return nil, err
		}
		if cfg.worst() {
			cfg.est.stop = cfg.est.applyWorst(cfg)
		} else if cfg.est.stop == "" {
			if err := cfg.est.apply(cfg); err != nil {
				cfg.est.stop = err.Error()
			} else if d1, d2, betaEach, err = cfg.sensitivities(); err != nil {
				cfg.est.stop = err.Error()
			}
		}
		if cfg.est.stop != "" {
			return cfg.stopped(run, o, mu, cfg.est.stop), nil
		}
	}
	if sh == nil {
		run.Progress("gram", 0, 1)
		if sh, _, err = gramOf(ctx, src, mu, cfg.clip); err != nil {
			return nil, err
		}
		run.Progress("gram", 1, 1)
	}
	if cfg.worst() {
		if err := cfg.ptrTest(ctx, run, sh); err != nil {
			return nil, err
		}
		if !cfg.ptr.passed {
			return cfg.stopped(run, o, mu, fmt.Sprintf("the eigengap test did not pass (released distance %.4g ≤ threshold %.4g at the proposed gap %.4g): the data are not shown to have an eigengap after component %d that the worst-case calibration can stand on", cfg.ptr.dist, cfg.ptr.threshold, cfg.gap0, cfg.r)), nil
		}
		if d1, d2, betaEach, err = cfg.sensitivities(); err != nil {
			return nil, err
		}
	}
	res, err := caiXiaZha(ctx, run, plan, cfg, src, mu, sh, d1, d2, betaEach)
	if err != nil {
		return nil, err
	}
	cfg.finish(run, o, res, mu)
	return res, nil
}

// meanClipQuantile and meanClipWeight fix mean_clip=auto: the mean's clip
// is a private median of the raw row norms, paid from a fifth of
// mean_share (DERIVATIONS.md §12.3).
const (
	meanClipQuantile = 0.5
	meanClipWeight   = 0.2
)

// privateMean releases the clip of the mean (mean_clip=auto: a private
// quantile of the raw row norms, from the plan's clip share) and the mean.
func (c *cxzConfig) privateMean(ctx context.Context, run *sdk.Run, plan *privacy.Plan, src *rowsrc.Source) ([]float64, error) {
	if c.meanClip == 0 {
		q, err := privateClip(ctx, run, plan, shareMeanClip, "clip quantile (mean)", src, nil, meanClipQuantile)
		if err != nil {
			return nil, err
		}
		c.meanClip, c.meanAuto = q, true
	}
	run.Progress("mean", 0, 1)
	mu, _, err := privateMean(ctx, run, plan, src, "mean", nil, c.meanClip)
	return mu, err
}

// finish adds the released preprocessing (the mean and its clip, the model
// estimate, the clip) to res and logs its notes.
func (c *cxzConfig) finish(run *sdk.Run, o *cxzOptions, res *sdk.Result, mu []float64) {
	if mu != nil {
		res.AddMatrix(pcaeval.MeanName, mat.NewDense(1, len(mu), append([]float64(nil), mu...)), sdk.Public,
			"private mean of the rows (1×p), subtracted before the estimate; dplr transform subtracts it from new rows")
		res.AddScalar("mean_clip", c.meanClip, sdk.Public, "row-norm bound used for the private mean")
	}
	if c.est != nil {
		c.est.report(res, c)
	}
	if c.clip > 0 {
		res.AddScalar("clip", c.clip, sdk.Public, "row-norm bound used (given by the user)")
	}
	if c.ptr != nil {
		c.ptr.report(res)
	}
	res.Warnings = append(append([]string(nil), o.warnings...), res.Warnings...)
	for _, note := range res.Notes {
		run.Logf("%s", note)
	}
}

// stopped is the result of a planned stop (DERIVATIONS.md §12, §13),
// decided from released values alone: it holds those values and the run is
// charged only the steps that ran, all of them worst-case DP.
func (c *cxzConfig) stopped(run *sdk.Run, o *cxzOptions, mu []float64, why string) *sdk.Result {
	e := c.est
	res := &sdk.Result{Guarantee: privacy.Guarantee{Neighbours: "one row replaced by an arbitrary row"}}
	ran, released := "the mean with center=private", "the eigengap test's distance"
	if e != nil {
		ran += fmt.Sprintf(", the model estimate on rows clipped to %.6g", e.clip)
		released = fmt.Sprintf("the private model estimate (σ², λ and their bounds), how many spikes stand out (%d) and their directions", e.stand)
		if e.stand > 0 {
			p, _ := e.v.Dims()
			res.AddMatrix("U", mat.DenseCopyOf(e.v.Slice(0, p, 0, e.stand)), sdk.Public,
				"the directions of the spikes that stand out: top eigenvectors of the released noisy clipped second moment (post-processing of the model estimate; p×spikes)")
		}
	}
	if c.ptr != nil {
		ran += ", the eigengap test"
		if e != nil {
			released += ", the eigengap test's distance"
		}
	}
	res.Guarantee.Assumptions = append(res.Guarantee.Assumptions, fmt.Sprintf("planned stop: only the worst-case DP steps before stage 1 ran (%s); nothing model-based was released", ran))
	if c.meanAuto {
		res.Guarantee.Assumptions = append(res.Guarantee.Assumptions, fmt.Sprintf("the mean clip %.6g is a private quantile of the row norms (a declared step)", c.meanClip))
	}
	res.AddWarning(fmt.Sprintf("planned stop before stage 1: %s. Released: %s; charged only the steps that ran. To go further: a lower rank (or rank=auto), a larger budget or estimate_share, or pca-analyze-gauss (worst-case DP, no model)", why, released))
	c.finish(run, o, res, mu)
	return res
}

// hasU reports whether res releases components (a planned stop with no
// spike standing out releases none).
func hasU(res *sdk.Result) bool {
	for _, m := range res.Matrices {
		if m.Name == "U" {
			return true
		}
	}
	return false
}

// caiXiaZha is Algorithm 1 (DERIVATIONS.md §2.1): stage 1 releases the
// noisy projector ÛÛᵀ + Z and keeps its top-r eigenvectors Ũ; stage 2
// releases Λ̃ = Ũᵀ(Σ̂ − σ²I)Ũ + E; the outputs are post-processing.
func caiXiaZha(ctx context.Context, run *sdk.Run, plan *privacy.Plan, cfg *cxzConfig, src *rowsrc.Source, mu []float64, sh *mat.SymDense, d1, d2, betaEach float64) (*sdk.Result, error) {
	res := &sdk.Result{}
	ut, err := cxzStage1(ctx, run, plan, res, sh, cfg.r, d1)
	if err != nil {
		return nil, err
	}
	var lt *mat.SymDense
	if !cfg.PCAOnly {
		if lt, err = cxzStage2(ctx, run, plan, res, cfg, src, mu, sh, ut, d2, betaEach); err != nil {
			return nil, err
		}
	}
	if err := cxzOutputs(ctx, run, res, cfg, ut, lt); err != nil {
		return nil, err
	}
	if cfg.worst() {
		res.Guarantee = worstGuarantee(cfg)
		return res, nil
	}
	res.Guarantee = cxzGuarantee(cfg, betaEach)
	res.Warnings = append(res.Warnings, conditionNotes(cfg.model)...)
	return res, nil
}

// cxzStage1 releases P̂ + Z (Frobenius sensitivity Δ1) and returns the
// eigenvectors of its r largest algebraic eigenvalues.
func cxzStage1(ctx context.Context, run *sdk.Run, plan *privacy.Plan, res *sdk.Result, sh *mat.SymDense, r int, d1 float64) (*mat.Dense, error) {
	p := sh.SymmetricDim()
	_, uhat, err := topEigen(ctx, run.Backend, sh, r)
	if err != nil {
		return nil, err
	}
	rel, err := releaseAt(run, plan, shareStage1, "eigenvectors (projector ÛÛᵀ + Z)", d1, p*(p+1)/2)
	if err != nil {
		return nil, err
	}
	proj := mat.NewSymDense(p, nil)
	proj.SymOuterK(1, uhat)
	if err := rel.AddSym(run.Rand, proj); err != nil { // P̂ + Z, rounded to the noise grid
		return nil, err
	}
	run.Progress("stage1", 0, 1)
	_, ut, err := topEigen(ctx, run.Backend, proj, r)
	if err != nil {
		return nil, err
	}
	run.Progress("stage1", 1, 1)
	res.AddScalar("delta1", d1, sdk.Public, "projector sensitivity Δ1 (from public parameters)")
	res.AddScalar("noise_sd_projector", rel.Scale(), sdk.Public, "standard deviation of each entry of Z")
	return ut, nil
}

// cxzStage2 releases Λ̃ = Ũᵀ(Σ̂ − σ²I)Ũ + E (Frobenius sensitivity Δ2;
// with the guard, rows clipped to ‖x‖² ≤ τ first).
func cxzStage2(ctx context.Context, run *sdk.Run, plan *privacy.Plan, res *sdk.Result, cfg *cxzConfig, src *rowsrc.Source, mu []float64, sh *mat.SymDense, ut *mat.Dense, d2, betaEach float64) (*mat.SymDense, error) {
	_, r := ut.Dims()
	lt, nClip, tau, err := compressed(ctx, run, src, mu, sh, ut, cfg, betaEach)
	if err != nil {
		return nil, err
	}
	for i := 0; i < r; i++ {
		lt.SetSym(i, i, lt.At(i, i)-cfg.sub)
	}
	rel, err := releaseAt(run, plan, shareStage2, "eigenvalues (Ũᵀ(Σ̂−σ²I)Ũ + E)", d2, r*(r+1)/2)
	if err != nil {
		return nil, err
	}
	if err := rel.AddSym(run.Rand, lt); err != nil { // Λ̃ = Ũᵀ(Σ̂−σ²I)Ũ + E
		return nil, err
	}
	res.AddScalar("delta2", d2, sdk.Public, "eigenvalue-stage sensitivity Δ2 (from public parameters)")
	res.AddScalar("noise_sd_eigen", rel.Scale(), sdk.Public, "standard deviation of each entry of E")
	if cfg.Guarded {
		res.AddScalar("tau", tau, sdk.Public, "row-norm² bound τ used by the guard")
		res.AddScalar("guard_clipped_rows", float64(nClip), sdk.Evaluation, "rows the guard shrank (computed from raw data: do not publish)")
	}
	return lt, nil
}

// compressed returns Ũᵀ Σ̂ Ũ, or with the guard Ũᵀ Σ̂_τ Ũ where rows are
// clipped to ‖x‖² ≤ τ (from the second moment of the rows clipped to √τ,
// one more pass).
func compressed(ctx context.Context, run *sdk.Run, src *rowsrc.Source, mu []float64, sh *mat.SymDense, ut *mat.Dense, cfg *cxzConfig, betaEach float64) (*mat.SymDense, int, float64, error) {
	if !cfg.Guarded {
		out, err := compress(run.Backend, sh, ut)
		return out, 0, 0, err
	}
	tau := RowNormBound(cfg.model, betaEach)
	if cfg.clip > 0 {
		// The rows were already clipped to clip: the guard's bound is the
		// smaller of the two (Δ2 keeps τ, which is then conservative).
		tau = math.Min(tau, cfg.clip*cfg.clip)
	}
	// Clipping to clip and then to √τ ≤ clip is clipping to √τ.
	n, _ := src.Dims()
	st, nClip, err := src.SecondMoment(ctx, mu, math.Sqrt(tau), 1/float64(n))
	if err != nil {
		return nil, 0, 0, err
	}
	out, err := compress(run.Backend, st, ut)
	return out, nClip, tau, err
}

// compress returns VᵀSV for a p×r frame V, symmetrised exactly.
func compress(be backend.Backend, s mat.Symmetric, v *mat.Dense) (*mat.SymDense, error) {
	p, r := v.Dims()
	sv := mat.NewDense(p, r, nil)
	if err := be.Mul(sv, s, false, v, false); err != nil {
		return nil, err
	}
	g := mat.NewDense(r, r, nil)
	if err := be.Mul(g, v, true, sv, false); err != nil {
		return nil, err
	}
	out := mat.NewSymDense(r, nil)
	for i := 0; i < r; i++ {
		for j := i; j < r; j++ {
			out.SetSym(i, j, 0.5*(g.At(i, j)+g.At(j, i)))
		}
	}
	return out, nil
}

// cxzOutputs adds U, Lambda, eigenvalues and Sigma (all post-processing of
// the two noisy releases).
func cxzOutputs(ctx context.Context, run *sdk.Run, res *sdk.Result, cfg *cxzConfig, ut *mat.Dense, lt *mat.SymDense) error {
	if lt == nil {
		res.AddMatrix("U", ut, sdk.Public, "private top-r eigenvectors Ũ (p×r, orthonormal)")
		return nil
	}
	r := lt.SymmetricDim()
	dvals, wd, err := topEigen(ctx, run.Backend, lt, r) // descending
	if err != nil {
		return err
	}
	if cfg.PSD {
		for j := range dvals {
			dvals[j] = math.Max(dvals[j], 0)
		}
		full := lowRank(wd, mat.NewDiagDense(r, dvals), 0) // W·max(D, 0)·Wᵀ, symmetric
		for i := 0; i < r; i++ {
			for j := i; j < r; j++ {
				lt.SetSym(i, j, full.At(i, j))
			}
		}
	}
	u, lam := ut, mat.DenseCopyOf(lt)
	if cfg.Rotate {
		u = mat.NewDense(ut.RawMatrix().Rows, r, nil)
		u.Mul(ut, wd)
		lam = mat.DenseCopyOf(mat.NewDiagDense(r, dvals))
	}
	ev := make([]float64, r)
	for j := range ev {
		ev[j] = dvals[j] + cfg.sub
	}
	res.AddMatrix("U", u, sdk.Public, "private top-r eigenvectors Ũ (p×r, orthonormal)")
	res.AddMatrix("Lambda", lam, sdk.Public, "Λ̃ = Ũᵀ(Σ̂ − σ²I)Ũ + E (r×r, symmetric)")
	res.AddSeries("eigenvalues", ev, sdk.Public, "top-r eigenvalues of Σ̃ (eigenvalues of Λ̃ plus σ²), descending")
	p, _ := ut.Dims()
	if evr, ok := pcaeval.ExplainedRatio(ev, float64(p-r)*cfg.sub); ok {
		res.AddSeries("explained_variance_ratio", evr, sdk.Public, "eigenvalues of Σ̃ over its trace Σ_k eigenvalue_k + (p − r)σ² (negative values counted as 0): a model-based estimate of each component's share of the variance (post-processing of Λ̃ and σ²; meaningful for data from the spiked model)")
	}
	if cfg.OutputSigma {
		res.AddMatrix("Sigma", lowRank(u, lam, cfg.sub), sdk.Public, "Σ̃ = ŨΛ̃Ũᵀ + σ²I (p×p)")
	}
	return nil
}

func cxzGuarantee(cfg *cxzConfig, betaEach float64) privacy.Guarantee {
	m := cfg.model
	g := privacy.Guarantee{
		Kind:       privacy.Model,
		Model:      "spiked Gaussian covariance",
		Beta:       cfg.beta,
		Neighbours: "one row replaced by an independent draw from the same model",
		Assumptions: []string{
			fmt.Sprintf("rows i.i.d. N(0, UΛUᵀ + σ²I) with public rank r = %d", m.r()),
			fmt.Sprintf("σ² ≤ %.6g (public upper bound)", m.Sigma2),
			fmt.Sprintf("spikes λ_k ≥ (%s) (public lower bounds)", fmtFloats(m.LambdaLow)),
			fmt.Sprintf("spikes λ_k ≤ (%s) (public upper bounds)", fmtFloats(m.LambdaHigh)),
		},
	}
	switch cfg.cal {
	case CalExplicit, CalSubGaussian, CalDavisKahan:
		g.Assumptions = append(g.Assumptions,
			fmt.Sprintf("%s sensitivities, each bound failing with probability ≤ %.3g over the data", cfg.cal, betaEach))
		if cfg.cal != CalDavisKahan {
			g.Assumptions = append(g.Assumptions, "Δ1 bounds the first-order term of the projector perturbation; higher-order terms are smaller by a factor of order (σ²/λ)(√(p/n)+p/n) and are covered by the measured slack (largest observed change ≈ 0.26–0.29·Δ1; DERIVATIONS.md §2.5)")
		} else {
			g.Assumptions = append(g.Assumptions, fmt.Sprintf("the sample eigengap exceeds λ_r − 2C·√((λ_1+σ²)(rλ_1+pσ²)/n) with C = %.3g", cfg.DKC))
		}
		if cfg.safety != 1 {
			g.Assumptions = append(g.Assumptions, fmt.Sprintf("sensitivities multiplied by a safety factor %.3g", cfg.safety))
		}
	case CalPaper, CalDiverging:
		g.Beta = PaperFailureProb(m)
		g.Assumptions = append(g.Assumptions,
			fmt.Sprintf("the paper's unspecified absolute constants are at most C2 = %.4g, C3 = %.4g", cfg.C2, cfg.C3),
			"failure probability also includes e^(−c1·p) for the paper's unspecified constant c1")
	}
	if cfg.cal == CalSubGaussian {
		g.Model = "spiked sub-Gaussian covariance"
		g.Assumptions[0] = fmt.Sprintf("rows i.i.d. centred sub-Gaussian with covariance UΛUᵀ + σ²I and public rank r = %d; sensitivities derived for Gaussian rows and inflated by the safety factor (validated empirically for Rademacher and uniform factors only)", m.r())
	}
	if cfg.Guarded {
		g.Assumptions = append(g.Assumptions, "stage 2 is worst-case DP (rows clipped to ‖x‖² ≤ τ); stage 1 remains model-based")
	}
	if cfg.clip > 0 {
		g.Assumptions = append(g.Assumptions, fmt.Sprintf("rows clipped to the public norm %.6g in every step (the model analysis assumes the clip shortens no row)", cfg.clip))
	}
	if cfg.estimate {
		g.Beta += cfg.betaEst
	} else if cfg.clip == 0 {
		g.Assumptions = append(g.Assumptions, "σ² and λ were given by the user and could not be checked against any public bound (no clip): if they overstate the data's spikes, the noise is too small and this guarantee does not hold")
	}
	if cfg.private() {
		g.Assumptions = append(g.Assumptions, fmt.Sprintf("centred with a private mean (rows clipped to norm %.4g, worst-case DP step); the spiked-model sensitivities ignore the error of that mean", cfg.meanClip))
		if cfg.meanAuto {
			g.Assumptions = append(g.Assumptions, fmt.Sprintf("the mean clip %.6g is a private quantile of the row norms (a declared step)", cfg.meanClip))
		}
	}
	return g
}

// Passes implements sdk.RemoteEstimator (the passes of each step:
// DERIVATIONS.md §11).
func (CXZ) Passes(opts any, _ sdk.Shape) ([]string, error) {
	o := opts.(*cxzOptions)
	return o.passes(rowsrc.Kinds(o.estimate && o.CXZClip == nil || o.private() && o.meanClip == 0, o.private())), nil
}

// SpikedModel holds the public parameters of the spiked covariance model
// Σ = U·diag(λ)·Uᵀ + σ²I_p that the Cai–Xia–Zha sensitivities depend on.
type SpikedModel struct {
	N, P int
	// LambdaLow are public lower bounds for the spikes λ_1..λ_r (one per
	// component); they enter the projector sensitivity Δ1, which decreases
	// in λ.
	LambdaLow []float64
	// LambdaHigh are public upper bounds for the spikes; they enter the
	// eigenvalue sensitivity Δ2 and the row-norm bound τ.
	LambdaHigh []float64
	// Sigma2 is a public upper bound for the noise variance σ².
	Sigma2 float64
}

// Validate checks the model's numbers.
func (m SpikedModel) Validate() error {
	r := len(m.LambdaLow)
	if m.N < 1 || m.P < 2 {
		return fmt.Errorf("spiked model: n = %d, p = %d", m.N, m.P)
	}
	if r < 1 || len(m.LambdaHigh) != r {
		return fmt.Errorf("spiked model: %d lower and %d upper spike bounds", r, len(m.LambdaHigh))
	}
	if 2*r >= m.P {
		return fmt.Errorf("spiked model: rank %d too large for dimension %d (need 2r < p)", r, m.P)
	}
	if err := finitePositive("sigma2", m.Sigma2); err != nil {
		return err
	}
	for k := 0; k < r; k++ {
		if err := finitePositive("lambda", m.LambdaLow[k]); err != nil {
			return err
		}
		if err := finitePositive("lambda_upper", m.LambdaHigh[k]); err != nil {
			return err
		}
		if m.LambdaHigh[k] < m.LambdaLow[k] {
			return fmt.Errorf("spike %d: upper bound %v below lower bound %v", k+1, m.LambdaHigh[k], m.LambdaLow[k])
		}
	}
	return nil
}

func (m SpikedModel) r() int { return len(m.LambdaLow) }

func (m SpikedModel) lambdaMinLow() float64 {
	v := math.Inf(1)
	for _, l := range m.LambdaLow {
		v = math.Min(v, l)
	}
	return v
}

func (m SpikedModel) lambdaMaxHigh() float64 {
	v := 0.0
	for _, l := range m.LambdaHigh {
		v = math.Max(v, l)
	}
	return v
}

// ExplicitDelta1 is the closed-form bound, holding for all rows at once
// with probability ≥ 1−β, on the Frobenius change of the sample spectral
// projector ÛÛᵀ when one row is replaced by a model draw: Δ1 = 2√2·√(AB)/n
// with A and B as in DERIVATIONS.md §2.2.
func ExplicitDelta1(m SpikedModel, beta float64) float64 {
	r := m.r()
	t := math.Log(4 * float64(m.N) / beta)
	var sa, sa2, amax float64
	for _, l := range m.LambdaLow {
		a := (l + m.Sigma2) / (l * l)
		sa += a
		sa2 += a * a
		amax = math.Max(amax, a)
	}
	A := sa + 2*math.Sqrt(t*sa2) + 2*t*amax
	q := float64(m.P - r)
	B := m.Sigma2 * (q + 2*math.Sqrt(q*t) + 2*t)
	return 2 * math.Sqrt2 * math.Sqrt(A*B) / float64(m.N)
}

// RowNormBound is τ, a bound on max ‖X_i‖² over all 2n rows of a data set
// and its neighbours holding with probability ≥ 1−β under the Gaussian
// model: τ = T + 2F√t + 2Mt with t = log(2n/β), T = tr Σ, F = ‖Σ‖_F,
// M = ‖Σ‖ (computed from the upper spike bounds).
func RowNormBound(m SpikedModel, beta float64) float64 {
	r := m.r()
	t := math.Log(2 * float64(m.N) / beta)
	s2 := m.Sigma2
	var T, F2 float64
	for _, l := range m.LambdaHigh {
		T += l
		F2 += (l + s2) * (l + s2)
	}
	T += float64(m.P) * s2
	F2 += float64(m.P-r) * s2 * s2
	M := m.lambdaMaxHigh() + s2
	return T + 2*math.Sqrt(F2*t) + 2*M*t
}

// ExplicitDelta2 is the high-probability bound √2·τ/n on
// ‖Σ̂ − Σ̂'‖_F ≥ ‖Ũᵀ(Σ̂ − Σ̂')Ũ‖_F for one replaced row (DERIVATIONS.md §2.3).
func ExplicitDelta2(m SpikedModel, beta float64) float64 {
	return math.Sqrt2 * RowNormBound(m, beta) / float64(m.N)
}

// PaperDelta1 is the paper's Lemma 3 form
// Δ1 = C2·(σ²/λ + √(σ²/λ))·√(p(r + log n))/n, with λ the smallest lower
// spike bound and a user constant C2 (the paper leaves it unspecified).
func PaperDelta1(m SpikedModel, c2 float64) float64 {
	q := m.Sigma2 / m.lambdaMinLow()
	return c2 * (q + math.Sqrt(q)) * math.Sqrt(float64(m.P)*(float64(m.r())+math.Log(float64(m.N)))) / float64(m.N)
}

// PaperDelta2 is the paper's Lemma 4 form Δ2 = C3·(λ(r + log n) + σ²p)/n
// with λ the largest upper spike bound.
func PaperDelta2(m SpikedModel, c3 float64) float64 {
	return c3 * (m.lambdaMaxHigh()*(float64(m.r())+math.Log(float64(m.N))) + m.Sigma2*float64(m.P)) / float64(m.N)
}

// DivergingDelta1 is Corollary 1's form for a growing condition number
// κ0 = λ_1/λ_r: Δ1 = C2·(σ²/λ_r + √(κ0σ²/λ_r))·√(p(r + log n))/n, with λ_r
// the smallest lower bound and λ_1 the largest upper bound.
func DivergingDelta1(m SpikedModel, c2 float64) float64 {
	lr := m.lambdaMinLow()
	k0 := m.lambdaMaxHigh() / lr
	q := m.Sigma2 / lr
	return c2 * (q + math.Sqrt(k0*q)) * math.Sqrt(float64(m.P)*(float64(m.r())+math.Log(float64(m.N)))) / float64(m.N)
}

// DavisKahanDelta1 is the ablation bound the paper improves upon:
// Δ1 = 2√2·Δ2/g with Δ2 = √2τ/n and g = λ_r − 2D̂ a lower bound on the
// sample eigengap, D̂ = C·√((λ_1+σ²)(rλ_1+pσ²)/n). It errors when g ≤ 0.
func DavisKahanDelta1(m SpikedModel, beta, c float64) (float64, error) {
	l1 := m.lambdaMaxHigh()
	d := c * math.Sqrt((l1+m.Sigma2)*(float64(m.r())*l1+float64(m.P)*m.Sigma2)/float64(m.N))
	g := m.lambdaMinLow() - 2*d
	if !(g > 0) {
		return 0, fmt.Errorf("davis-kahan calibration: eigengap bound λ_r − 2D̂ = %.4g ≤ 0 (n too small for this λ)", g)
	}
	return 2 * math.Sqrt2 * ExplicitDelta2(m, beta) / g, nil
}

// PaperFailureProb is the part of the paper's failure probability that has
// explicit constants, 4n⁻⁹ + 10^(−20·r̃) with r̃ = tr Σ/‖Σ‖ (the e^(−c1·p)
// term has an unspecified constant and is listed as an assumption).
func PaperFailureProb(m SpikedModel) float64 {
	var T float64
	for _, l := range m.LambdaLow {
		T += l
	}
	T += float64(m.P) * m.Sigma2
	rt := T / (m.lambdaMaxHigh() + m.Sigma2)
	return 4*math.Pow(float64(m.N), -9) + math.Pow(10, -20*rt)
}

// sharePTR names the eigengap test in the pre-flight declaration (it is
// paid from its own part of the grant, outside the plan); ptrDeltaShare is
// the part of δ the test takes; below ptrPassOdds, the chance that the
// test passes on any data set of the request's size, it is refused before
// anything is spent (it would mostly charge its steps for a planned stop).
const (
	sharePTR      = "eigengap test (propose-test-release)"
	ptrDeltaShare = 0.5
	ptrPassOdds   = 0.05
)

// ptrOutcome is the released outcome of the eigengap test.
type ptrOutcome struct {
	gap0, dist, threshold float64
	passed                bool
}

// worst reports sensitivity=worst-case.
func (c *cxzConfig) worst() bool { return c.cal == CalWorstCase }

// testCanPass refuses, from n, ε and δ alone, a request whose eigengap
// test passes with probability below ptrPassOdds on every data set
// (DERIVATIONS.md §13.1).
func (c *cxzConfig) testCanPass(g privacy.Grant) error {
	n := c.model.N
	if n <= 0 {
		return nil
	}
	eps, delta := c.ptrCost(g)
	b := 1 / eps
	if dmax, need := float64(n)/2, b*math.Log(1/delta)-b*math.Log(0.5/ptrPassOdds); dmax < need {
		return sdk.BadRequest("sensitivity=worst-case: %d rows are too few for the eigengap test at ε_t = %.3g, δ_t = %.3g (ptr_share of the grant): even the largest gap the clip allows is fewer than %.0f row replacements from failing, and the test needs about %.0f to pass with probability %.2g; raise ε or ptr_share, or use the model-based mode or pca-analyze-gauss", n, eps, delta, dmax, need, ptrPassOdds)
	}
	return nil
}

// ptrCost is the test's (ε_t, δ_t): ptr_share of ε and half of δ.
func (c *cxzConfig) ptrCost(g privacy.Grant) (eps, delta float64) {
	return c.PTRShare * g.Epsilon, ptrDeltaShare * g.Delta
}

// WorstCaseDelta1 is the Frobenius sensitivity of the projector onto the
// top-r eigenvectors of the second moment of n rows clipped to clip, for
// a data set whose eigengap λ_r − λ_{r+1} is at least gap
// (DERIVATIONS.md §13.2): 2√2·min(√r, √2)·clip²/(n·gap).
func WorstCaseDelta1(n, r int, clip, gap float64) float64 {
	return 2 * math.Sqrt2 * WorstCaseDelta2(n, r, clip) / gap
}

// WorstCaseDelta2 is the Frobenius sensitivity of Ũᵀ Σ̂ Ũ (Ũ any p×r
// orthonormal frame) for n rows clipped to clip: min(√r, √2)·clip²/n
// (DERIVATIONS.md §13.3).
func WorstCaseDelta2(n, r int, clip float64) float64 {
	return math.Min(math.Sqrt(float64(r)), math.Sqrt2) * clip * clip / float64(n)
}

// GapDistance is the distance to instability of the eigengap test: with
// vals the eigenvalues of the clipped second moment (at least r + 1 of
// them, in any order), d = max(0, ⌊(ĝ − gap0)/(2·clip²/n)⌋), ĝ = λ_r −
// λ_{r+1}. Replacing one row moves ĝ by at most 2·clip²/n, so d changes by
// at most 1 (DERIVATIONS.md §13.1).
func GapDistance(vals []float64, r, n int, clip, gap0 float64) float64 {
	v := descending(vals)
	d := math.Floor((v[r-1] - v[r] - gap0) / (2 * clip * clip / float64(n)))
	return math.Max(d, 0)
}

// ptrTest releases the distance to a gap below the proposed gap0 with
// Laplace noise and decides whether the fit goes on (DERIVATIONS.md
// §13.1); sh is the second moment of the clipped rows.
func (c *cxzConfig) ptrTest(ctx context.Context, run *sdk.Run, sh *mat.SymDense) error {
	vals, _, err := topEigen(ctx, run.Backend, sh, c.r+1)
	if err != nil {
		return err
	}
	eps, delta := c.ptrCost(run.Acct.Grant())
	rel, thr, err := run.Acct.PTRTest(sharePTR, eps, delta)
	if err != nil {
		return err
	}
	x := []float64{GapDistance(vals, c.r, c.model.N, c.clip, c.gap0)}
	if err := rel.Add(run.Rand, x); err != nil {
		return err
	}
	c.ptr = &ptrOutcome{gap0: c.gap0, dist: x[0], threshold: thr, passed: x[0] > thr}
	return nil
}

// applyWorst takes from the released model estimate what the worst-case
// mode uses (post-processing): the rank (rank=auto), the σ² subtracted in
// stage 2 and, with ptr_gap=auto, the proposed gap, half the gap of the
// released noisy spectrum at the rank fitted. It returns why the fit
// stops ("" when it goes on). The model's spike bounds are not used.
func (e *modelEstimate) applyWorst(cfg *cxzConfig) string {
	if cfg.auto {
		if e.rank == 0 {
			return e.stop
		}
		cfg.r = e.rank
	}
	if cfg.Sigma2 == nil {
		cfg.sub = 0 // a σ² estimate that is not positive subtracts nothing
		if e.Sigma2 > 0 {
			cfg.sub = e.Sigma2
		}
	}
	if cfg.gap0 == 0 {
		k := cfg.r
		cfg.gap0 = (e.spectrum[k-1] - e.spectrum[k]) / 2
		if !(cfg.gap0 > 0) {
			return fmt.Sprintf("the released noisy spectrum shows no gap after component %d (ptr_gap=auto): no eigengap to test", k)
		}
	}
	return ""
}

// report releases the test's outcome.
func (p *ptrOutcome) report(res *sdk.Result) {
	res.AddScalar("ptr_gap", p.gap0, sdk.Public, "the proposed lower bound g₀ for the eigengap of the clipped second moment")
	res.AddScalar("ptr_distance", p.dist, sdk.Public, "the released noisy distance to a data set whose gap is below g₀ (in replaced rows)")
	res.AddScalar("ptr_threshold", p.threshold, sdk.Public, "the distance the test needed to exceed to go on")
}

// worstGuarantee is the worst-case mode's guarantee: (ε, δ)-DP for every
// data set under replace-one neighbours (DERIVATIONS.md §13.4).
func worstGuarantee(cfg *cxzConfig) privacy.Guarantee {
	g := privacy.Guarantee{
		Neighbours: "one row replaced by an arbitrary row",
		Assumptions: []string{
			fmt.Sprintf("rows clipped to the public norm %.6g in every step", cfg.clip),
			fmt.Sprintf("propose-test-release on the eigengap λ_%d − λ_%d of the clipped second moment: proposed gap %.6g, released distance %.4g > threshold %.4g; the stages are calibrated to every data set with at least that gap, and the test's δ covers the others",
				cfg.r, cfg.r+1, cfg.ptr.gap0, cfg.ptr.dist, cfg.ptr.threshold),
		},
	}
	if cfg.est != nil {
		g.Assumptions = append(g.Assumptions, "the private model estimate (worst-case DP steps) only proposes the gap, the rank (rank=auto) and the σ² subtracted in stage 2; no model assumption enters the guarantee")
	}
	if cfg.private() {
		g.Assumptions = append(g.Assumptions, fmt.Sprintf("centred with a private mean (rows clipped to norm %.4g, worst-case DP step)", cfg.meanClip))
	}
	return g
}
