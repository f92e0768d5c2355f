package pca

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	rowclip "github.com/dplr/dplr/plugins/internal/clip"
)

// centerOptions are the private-centring parameters of the private
// estimators (DERIVATIONS.md §5).
type centerOptions struct {
	sdk.Center `default:"private" choices:"none,private,pairs" doc:"private (the default: PCA is about the spread around the mean, and an uncentred fit's first component is the mean): subtract a private mean of the rows (pca-analyze-gauss: two declared steps, the rows clipped to mean_clip, then their offsets from that first mean clipped to clip or its own private quantile, so that rows far from zero cost little accuracy; pca-amin: one step, the rows clipped to mean_clip); pairs: for tables whose columns sit far from zero (a year, a temperature in kelvin): fit the differences (x_a − x_b)/√2 of disjoint random pairs of rows, which need no mean and are unchanged by any offset, at the price of half as many rows (no mean is released, so dplr transform projects rows as given); none: the data are already centred (with a public mean)"`
	MeanClip   *float64 `param:"mean_clip" gt:"0" doc:"public row-norm bound for the private mean's first step (default: clip when it is a number; with clip=auto, a private quantile of the row norms paid from clip_share)"`
	MeanShare  *float64 `param:"mean_share" min:"0.001" max:"0.9" doc:"fraction of the budget spent on the private mean when center=private (default: 0.2 of ρ for pca-analyze-gauss, half on each of its two Gaussian steps, and 0.3 when the columns were divided by --column-scales, as a table whose columns sit at their own offsets needs; 0.1 of ε for pca-amin's one Laplace step, whose noise falls as 1/share rather than 1/√share)"`
	scaleOptions
}

// meanShare is mean_share, or its default for a mean released under mech:
// 0.1 for a pure Laplace split (shares of ε); for a Gaussian plan (shares
// of ρ: the noise falls as the share's square root) 0.2, or 0.3 when the
// columns were divided by the user's public scales (columnScaled): such a
// table keeps its columns' offsets, which cost the mean accuracy, while
// data given near zero (images, standardised tables) lose a little at 0.3
// (DERIVATIONS.md §5.2).
func (c *centerOptions) meanShare(mech privacy.Mechanism, columnScaled bool) float64 {
	switch {
	case c.MeanShare != nil:
		return *c.MeanShare
	case mech == privacy.MechLaplace:
		return 0.1
	case columnScaled:
		return 0.3
	}
	return 0.2
}

// private reports center=private.
func (c *centerOptions) private() bool { return c.Center.Value == sdk.CenterPrivate }

// centerPairs is the center value that fits differences of disjoint random
// pairs of rows (DERIVATIONS.md §5.1).
const centerPairs = "pairs"

// pairs reports center=pairs.
func (c *centerOptions) pairs() bool { return c.Center.Value == centerPairs }

// cxzCenterOptions are centerOptions for pca-cxz, which has no clip for
// mean_clip to default to: mean_clip is a public bound or auto, a private
// quantile of the row norms (DERIVATIONS.md §12.3).
type cxzCenterOptions struct {
	sdk.Center `default:"private" doc:"private (the default: PCA is about the spread around the mean): subtract a private mean of the rows clipped to mean_clip (its own declared step); none: the data are already centred (with a public mean), or follow the spiked model about zero"`
	MeanClip   string  `param:"mean_clip" default:"auto" doc:"with center=private: a public row-norm bound for the private mean, or auto (the default): a private median of the row norms, paid from a fifth of mean_share and released"`
	MeanShare  float64 `param:"mean_share" default:"0.1" min:"0.001" max:"0.9" doc:"fraction of the budget spent on the private mean (and its clip quantile with mean_clip=auto) when center=private"`

	meanClip float64 // the public mean clip; 0 with mean_clip=auto
}

// private reports center=private.
func (c *cxzCenterOptions) private() bool { return c.Center.Value == sdk.CenterPrivate }

// parseMeanClip reads mean_clip: auto or a positive finite number (the
// shared clip parser).
func (c *cxzCenterOptions) parseMeanClip() error {
	o := rowclip.Options{Clip: c.MeanClip}
	if err := o.Parse(); err != nil {
		return sdk.BadRequest("mean_%w", err)
	}
	c.meanClip = o.Value()
	return nil
}

// outputSigma is the option to also return a p×p covariance estimate.
type outputSigma struct {
	OutputSigma bool `param:"output_sigma" default:"false" doc:"also return the p×p covariance estimate Sigma"`
}

// evaluation is the opt-in evaluation every PCA estimator offers.
type evaluation struct {
	sdk.Evaluate `doc:"also report captured_variance_ratio: the share of the best possible rank-r variance that the released components capture, on the raw rows centred at their mean (scikit-learn's convention; 1 = as good as non-private PCA), and captured_variance_ratio_uncentred, the same without centring. EVALUATION ONLY: computed from the raw data, NOT private (costs one more Gram and eigendecomposition)"`
}

// checkShape validates the rank against the public dimension (strict: the
// spiked-model analysis needs 2r < p).
func checkShape(r int, s sdk.Shape, strict bool) error {
	switch p := s.P; {
	case p == 0:
		return nil
	case p < 2:
		return fmt.Errorf("dimension %d: PCA needs at least 2 columns", p)
	case r < 1:
		return sdk.BadRequest("rank %d must be at least 1", r)
	case strict && 2*r >= p:
		return sdk.BadRequest("rank %d too large for dimension %d: the spiked-model analysis needs 2r < p", r, p)
	case r > p:
		return sdk.BadRequest("rank %d exceeds the dimension %d", r, p)
	}
	return nil
}

// analyzeGaussOptions are pca-analyze-gauss's parameters.
type analyzeGaussOptions struct {
	sdk.Rank `doc:"number of principal components r"`
	clipOptions
	sdk.Noise `choices:"exact,zcdp,classical,analytic" default:"exact" doc:"how the Gaussian noise is calibrated: exact (the default: the tightest accounting dplr certifies; with a numeric clip the Gaussian steps compose exactly as Gaussian DP and σ comes from the grant's exact (ε, δ) curve, about 7 % less noise than zcdp at (1, 1e-6); with clip=auto the pure quantile step is composed in by the privacy loss distribution (the exponential mechanism as bounded range), which scales the zCDP split up by a little less: σ 0.942 of zcdp's at (1, 1e-6)), zcdp (ρ split in zero-concentrated DP: dplr's calibration before exact), classical (textbook formula per step, ε ≤ 1) or analytic (Balle–Wang per step, basic composition)"`
	outputSigma
	centerOptions
	evaluation
	sdk.Selection

	_ sdk.Renamed `param:"calibration" renamed:"noise"`
}

// Check implements sdk.Checker.
func (o *analyzeGaussOptions) Check(s sdk.Shape) error {
	return checkClipped(o.Rank.Value, s, &o.clipOptions, &o.centerOptions, privacy.MechGaussian)
}

// checkClipped checks the rank and the preprocessing options of a clipped
// estimator.
func checkClipped(r int, s sdk.Shape, c *clipOptions, ctr *centerOptions, mech privacy.Mechanism) error {
	if err := checkShape(r, s, false); err != nil {
		return err
	}
	if err := c.Parse(); err != nil {
		return err
	}
	return newPrepPlan(s, c, ctr, mech).check()
}

// aminOptions are pca-amin's parameters.
type aminOptions struct {
	sdk.Rank `doc:"number of principal components r"`
	clipOptions
	EigenvalueShare *float64 `param:"eigenvalue_share" min:"0" max:"0.9" doc:"fraction of ε for the Laplace eigenvalues (default 1/(r+1); 0: do not release eigenvalues)"`
	sdk.Noise       `choices:"exact,pure,zcdp" default:"exact" doc:"how ε is split among the pure steps: exact (the default): under an (ε, δ) grant, each step's share of the pure split scaled up by the largest common factor the tightest valid accounting certifies (zCDP, where an exponential-mechanism draw costs ε²/8, or the privacy loss distribution), never below the pure split (a single draw gets about 1.002×, rank 10 at (1, 1e-6) 1.42×); under a pure grant, the pure split. pure: basic composition (δ unused). zcdp: the pure split's proportions scaled to the grant's zCDP budget (comparison)"`
	outputSigma
	centerOptions
	evaluation
}

// valueShare is the eigenvalues' share of the non-mean budget.
func (o *aminOptions) valueShare() float64 {
	if o.EigenvalueShare != nil {
		return *o.EigenvalueShare
	}
	return 1 / float64(o.Rank.Value+1)
}

// Check implements sdk.Checker.
func (o *aminOptions) Check(s sdk.Shape) error {
	if err := checkClipped(o.Rank.Value, s, &o.clipOptions, &o.centerOptions, privacy.MechLaplace); err != nil {
		return err
	}
	if o.released() {
		return sdk.BadRequest("feature_scale=released reads the variances off a released noisy covariance, which pca-amin does not release: use pca-analyze-gauss, or feature_scale=none with --column-scales")
	}
	if o.OutputSigma && !(o.valueShare() > 0) {
		return fmt.Errorf("output_sigma needs eigenvalues (eigenvalue_share > 0)")
	}
	return nil
}

// cxzOptions are pca-cxz's parameters.
type cxzOptions struct {
	Rank            string   `param:"rank" required:"true" doc:"number of principal components r (2r < p), or auto: keep the spikes that stand out, i.e. the largest r ≤ max_rank whose private spike lower bounds are all positive (decided from the private model estimate alone, DERIVATIONS.md §12.2; needs lambda=auto); the rank kept is released as output rank"`
	MaxRank         *int     `param:"max_rank" min:"1" doc:"with rank=auto: the most spikes looked for (default min(10, ⌊(p−1)/2⌋))"`
	Sigma2          *float64 `param:"sigma2" gt:"0" doc:"public upper bound for the noise variance σ² (it is also subtracted in stage 2). Unset (the default): estimated privately from estimate_share of the budget (DERIVATIONS.md §9); the estimate and the bound used are released"`
	Lambda          string   `param:"lambda" default:"auto" doc:"public lower bounds for the spike strengths λ_1 ≥ … ≥ λ_r above σ²: one value for all or r comma-separated values. auto (the default): private lower and upper confidence bounds from estimate_share of the budget (DERIVATIONS.md §9), released. A value you give is checked against clip before any spend when you give a clip; without one it cannot be checked, and overstating it shrinks the noise and voids the guarantee"`
	LambdaUpper     string   `param:"lambda_upper" default:"lambda" doc:"public upper bounds for the spikes (Δ2 and τ); lambda: the same as lambda (with lambda=auto: the private upper confidence bounds)"`
	CXZClip         *float64 `param:"clip" gt:"0" doc:"optional public row-norm bound, chosen without looking at the data: rows longer are scaled down to it in every step (under the spiked model choose it above the rows' norms). With it, a given lambda is refused before any spend when its spikes sum to clip² or more (rows of norm ≤ clip have a second moment of trace ≤ clip²), and the private estimate of σ² and λ needs no clip quantile"`
	EstimateShare   float64  `param:"estimate_share" default:"0.2" min:"0.01" max:"0.8" doc:"with sigma2 unset or lambda=auto: the fraction of the budget (of what the mean leaves, with center=private) spent on privately estimating σ² and λ (worst-case DP steps on clipped rows: a clip quantile unless clip is given, the trace, the spectrum and its top-r block)"`
	sdk.Sensitivity `choices:"explicit,paper,diverging,subgaussian,davis-kahan,worst-case" default:"explicit" doc:"how Δ1 and Δ2 are obtained (DERIVATIONS.md §2.2–2.4, §13): explicit (closed-form first-order bounds with exact Gaussian tails), paper (the paper's forms with constants c2, c3), diverging (Corollary 1), subgaussian (explicit times a safety factor), davis-kahan (ablation); worst-case: (ε, δ)-DP for any data set (needs clip and an (ε, δ) grant): a propose-test-release test on the sample eigengap (ptr_gap, ptr_share), then sensitivities that hold for every data set whose gap is at least the proposed one"`
	PTRGap          string  `param:"ptr_gap" default:"auto" doc:"with sensitivity=worst-case: the proposed lower bound g₀ for the eigengap λ_r − λ_{r+1} of the clipped second moment, or auto: half the gap of the released noisy spectrum of the private model estimate (needs sigma2 unset or lambda=auto). The fit goes on only if a private test finds the data far enough from a gap below g₀ (DERIVATIONS.md §13); otherwise it stops, charged only the steps that ran"`
	PTRShare        float64 `param:"ptr_share" default:"0.1" min:"0.01" max:"0.5" doc:"with sensitivity=worst-case: the share of ε spent on the propose-test-release test (which also takes half of δ)"`
	sdk.Noise       `choices:"auto,exact,zcdp,classical,analytic" default:"auto" doc:"Gaussian calibration: exact composes the Gaussian steps exactly as Gaussian DP (σ from the grant's exact (ε, δ) curve, about 7 % less noise than zcdp at (1, 1e-6)); zcdp composes ρ from the grant; classical is the paper's Lemma 1 with per-step ε ≤ 1; analytic is Balle–Wang; auto: exact for explicit, subgaussian, davis-kahan and worst-case, classical (the paper's) for paper and diverging"`
	Split           float64  `param:"split" default:"0.5" min:"0.01" max:"0.99" doc:"share of the budget left after the mean and the model estimate spent on stage 1 (eigenvectors); the paper uses 0.5"`
	PCAOnly         bool     `param:"pca_only" default:"false" doc:"run stage 1 only, spending the whole budget on the eigenvectors"`
	Beta            *float64 `param:"beta" gt:"0" max:"0.5" doc:"failure probability over the data of the explicit bounds (default: the grant's δ, or 1e-6 under a ρ grant)"`
	Safety          *float64 `param:"safety" min:"1" doc:"multiplier on the explicit sensitivities (default 1; 1.5 for subgaussian)"`
	C2              float64  `param:"c2" default:"8.5" min:"0" doc:"constant C2 of the paper's Δ1 (paper, diverging); the paper gives none, 8.5 matches the explicit bound"`
	C3              float64  `param:"c3" default:"7" min:"0" doc:"constant C3 of the paper's Δ2 (paper, diverging); the paper gives none, 7 matches 2τ/n"`
	DKC             float64  `param:"dk_c" default:"1" min:"0" doc:"constant C of the sample-eigengap bound in the davis-kahan ablation"`
	Guarded         bool     `param:"guarded" default:"false" doc:"clip rows to ‖x‖² ≤ τ for stage 2, making stage 2 worst-case DP (stage 1 stays model-based)"`
	Rotate          bool     `param:"rotate" default:"false" doc:"post-process: eigendecompose Λ̃ = WDWᵀ and return U = ŨW, Lambda = D"`
	PSD             bool     `param:"psd" default:"false" doc:"post-process: clip negative eigenvalues of Λ̃ to 0"`
	outputSigma
	cxzCenterOptions
	evaluation

	_ sdk.Renamed `param:"calibration" renamed:"sensitivity"`
	_ sdk.Renamed `param:"gaussian" renamed:"noise"`

	cal, gauss string
	ptrGap     float64 // a given ptr_gap (0: auto)
	rank       int     // the requested rank; with rank=auto, max_rank
	auto       bool
	low, high  []float64
	warnings   []string // for the result (sdk.Result.Warnings)
	estimate   bool     // σ² or λ comes from the private estimate
}

// Check implements sdk.Checker: rank, spike lists, calibration constants
// and option combinations, from the request and the public shape alone.
func (o *cxzOptions) Check(s sdk.Shape) error {
	if err := o.parseRank(s.P); err != nil {
		return err
	}
	if err := checkShape(o.rank, s, true); err != nil {
		return err
	}
	if err := o.parseMeanClip(); err != nil {
		return err
	}
	o.resolveNames()
	if err := o.checkModel(s); err != nil {
		return err
	}
	return o.checkCombinations()
}

// parseRank reads rank: a positive integer, or auto (then the largest rank
// looked for is max_rank, by default min(10, ⌊(p−1)/2⌋)).
func (o *cxzOptions) parseRank(p int) error {
	v := strings.TrimSpace(o.Rank)
	o.auto = v == rankAuto
	if !o.auto {
		if o.MaxRank != nil {
			return sdk.BadRequest("max_rank applies to rank=auto")
		}
		r, err := strconv.Atoi(v)
		if err != nil {
			return sdk.BadRequest("rank=%q: give a positive integer or auto", o.Rank)
		}
		o.rank = r
		return nil
	}
	if o.Lambda != lambdaAuto {
		return sdk.BadRequest("rank=auto decides the rank from the private spike estimate: it needs lambda=auto")
	}
	switch {
	case o.MaxRank != nil:
		o.rank = *o.MaxRank
	case p > 0:
		o.rank = max(min(10, (p-1)/2), 1)
	default:
		o.rank = 10
	}
	return nil
}

// resolveNames fills the noise default from the sensitivity.
func (o *cxzOptions) resolveNames() {
	o.cal = o.Sensitivity.Value
	o.gauss = o.Noise.Value
	if o.gauss == "auto" {
		o.gauss = privacy.NoiseExact
		if o.cal == CalPaper || o.cal == CalDiverging {
			o.gauss = privacy.NoiseClassical
		}
	}
}

// checkCombinations refuses options that contradict each other, before any
// step is declared.
func (o *cxzOptions) checkCombinations() error {
	if (o.cal == CalPaper || o.cal == CalDiverging) && (o.C2 <= 0 || o.C3 <= 0) {
		return fmt.Errorf("sensitivity %s needs positive constants c2, c3", o.cal)
	}
	if o.cal == CalDavisKahan && o.DKC <= 0 {
		return fmt.Errorf("sensitivity davis-kahan needs a positive dk_c")
	}
	if err := o.checkWorstCase(); err != nil {
		return err
	}
	if o.Guarded && o.PCAOnly {
		return fmt.Errorf("guarded applies to stage 2, which pca_only skips")
	}
	// output_sigma, rotate and psd post-process Λ̃, which pca_only does not
	// release: refuse them rather than silently returning less.
	if o.PCAOnly {
		for name, on := range map[string]bool{"output_sigma": o.OutputSigma, "rotate": o.Rotate, "psd": o.PSD} {
			if on {
				return fmt.Errorf("%s needs the eigenvalue stage (Λ̃), which pca_only skips", name)
			}
		}
	}
	return nil
}

// checkWorstCase checks sensitivity=worst-case's needs from the request
// alone: a public clip (the sensitivities are bounds on clipped rows), a
// proposed gap or the private estimate to propose it, and no guard (the
// clip already bounds stage 2 for any data).
func (o *cxzOptions) checkWorstCase() error {
	o.ptrGap = 0
	if o.cal != CalWorstCase {
		if o.PTRGap != lambdaAuto {
			return sdk.BadRequest("ptr_gap applies to sensitivity=worst-case")
		}
		return nil
	}
	if o.CXZClip == nil {
		return sdk.BadRequest("sensitivity=worst-case needs clip, a public row-norm bound: its sensitivities bound the change of one row of norm ≤ clip")
	}
	if o.Guarded {
		return sdk.BadRequest("guarded is a model-based option: with sensitivity=worst-case the clip already makes stage 2 worst-case DP")
	}
	if o.PTRGap == lambdaAuto {
		if !o.estimate {
			return sdk.BadRequest("ptr_gap=auto proposes the gap from the private model estimate, which does not run when sigma2 and lambda are given: give ptr_gap")
		}
		return nil
	}
	g, err := strconv.ParseFloat(strings.TrimSpace(o.PTRGap), 64)
	if err != nil || !(g > 0) || math.IsInf(g, 0) {
		return sdk.BadRequest("ptr_gap=%q: give a positive number or auto", o.PTRGap)
	}
	o.ptrGap = g
	return nil
}

// parseDescending reads a public spike list of length r (one value for
// all, or r values), which must be non-increasing.
func parseDescending(name, s string, r int) ([]float64, error) {
	l, err := gen.ParseSpikes(s, r)
	if err != nil {
		return nil, fmt.Errorf("parameter %s: %w", name, err)
	}
	for k := 1; k < len(l); k++ {
		if l[k] > l[k-1] {
			return nil, fmt.Errorf("parameter %s: spikes %v must be in descending order (λ_1 ≥ … ≥ λ_r)", name, l)
		}
	}
	return l, nil
}

// config is the fit's configuration: the model on n rows and p columns,
// the failure probability β (default: the grant's δ) and the safety factor.
func (o *cxzOptions) config(g privacy.Grant, n, p int) *cxzConfig {
	c := &cxzConfig{cxzOptions: o, meanClip: o.meanClip, r: o.rank, gap0: o.ptrGap}
	c.model = SpikedModel{N: n, P: p, LambdaLow: o.low, LambdaHigh: o.high}
	if o.Sigma2 != nil {
		c.model.Sigma2 = *o.Sigma2
	}
	c.sub = c.model.Sigma2
	if o.CXZClip != nil {
		c.clip = *o.CXZClip
	}
	c.beta = g.Delta
	if g.Kind != privacy.GrantApprox {
		c.beta = 1e-6 // a ρ grant has no δ to borrow (see the beta parameter's doc)
	}
	if o.Beta != nil {
		c.beta = *o.Beta
	}
	if c.estimate {
		c.betaEst = c.beta
	}
	c.safety = 1
	if c.cal == CalSubGaussian {
		c.safety = 1.5
	}
	if o.Safety != nil {
		c.safety = *o.Safety
	}
	return c
}

// nonPrivateOptions are pca-nonprivate's parameters.
type nonPrivateOptions struct {
	sdk.Rank `doc:"number of principal components r"`
	Center   string   `param:"center" default:"none" choices:"none,empirical" doc:"none: use XᵀX/n; empirical: subtract the empirical mean"`
	Clip     *float64 `param:"clip" gt:"0" doc:"optional row-norm clip (to compare with the clipped private estimators on equal terms)"`
	outputSigma
	evaluation
}

// Check implements sdk.Checker.
func (o *nonPrivateOptions) Check(s sdk.Shape) error {
	return checkShape(o.Rank.Value, s, false)
}

// footprint estimates a PCA fit's peak memory from the public n and p: the
// rows when they are not mapped in place, and a handful of p×p matrices.
func footprint(s sdk.Shape) int64 {
	n, p := int64(s.N), int64(s.P)
	return 8 * (n*p + 4*p*p)
}

// Footprint implements sdk's memory-estimate hook for the clipped
// estimators, whose options embed centerOptions: feature_scale=private adds
// a divided copy of the rows.
func (c *centerOptions) Footprint(s sdk.Shape) int64 {
	if c.scaled() {
		return footprint(s) + 8*int64(s.N)*int64(s.P)
	}
	return footprint(s)
}

// Footprint implements sdk's memory-estimate hook (the spectral projector
// adds one more p×p matrix).
func (o *cxzOptions) Footprint(s sdk.Shape) int64 { return footprint(s) + 8*int64(s.P)*int64(s.P) }

// Footprint implements sdk's memory-estimate hook.
func (o *nonPrivateOptions) Footprint(s sdk.Shape) int64 { return footprint(s) }
