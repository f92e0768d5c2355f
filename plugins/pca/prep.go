package pca

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	rowclip "github.com/dplr/dplr/plugins/internal/clip"
	"github.com/dplr/dplr/plugins/internal/pcaeval"
	"github.com/dplr/dplr/plugins/internal/quantile"
	"github.com/dplr/dplr/plugins/internal/rowsrc"
)

// shareClip names the plan share that pays for the private clip quantiles.
const shareClip = rowclip.ShareName

// shareMeanClip names pca-cxz's share for its private mean clip
// (mean_clip=auto).
const shareMeanClip = "norm quantile (mean_clip=auto)"

// clipOptions are the shared clipping parameters (clip, clip_share,
// clip_quantile) of plugins/internal/clip.
type clipOptions = rowclip.Options

// prepPlan is the private preprocessing of a rows estimator: how many
// quantiles clip_share pays for, and the mean share.
type prepPlan struct {
	quantiles  int     // private norm quantiles to draw (0 to 3)
	meanAuto   bool    // the mean's clip is a private quantile of the raw norms
	clipShare  float64 // total weight of the quantiles
	meanShare  float64 // weight of the mean (0 without centring)
	meanSteps  int     // the mean's steps (meanStepsFor)
	scaleShare float64 // weight of the per-feature scales (0 without scaling)
	features   int     // the number of scales (p) when scaling
}

// newPrepPlan counts the private quantiles a fit on data of shape s
// (s.P features) whose mean is released under meanMech needs, and takes
// the mean's share (centerOptions.meanShare, by s.ColumnScaled): one for
// the mean's first clip when
// centring without mean_clip and without a numeric clip, one for its
// second step's clip (about the first mean) when it has two, and one for
// the clip of the centred rows with clip=auto.
func newPrepPlan(s sdk.Shape, c *clipOptions, ctr *centerOptions, meanMech privacy.Mechanism) prepPlan {
	pp := prepPlan{features: s.P}
	if ctr.private() { // center=pairs needs no mean
		pp.meanShare, pp.meanSteps = ctr.meanShare(meanMech, s.ColumnScaled), meanStepsFor(meanMech)
		if ctr.MeanClip == nil && c.Auto() {
			pp.meanAuto = true
			pp.quantiles++
		}
		if c.Auto() && pp.meanSteps == 2 {
			pp.quantiles++
		}
	}
	if c.Auto() {
		pp.quantiles++
	}
	if pp.quantiles > 0 {
		pp.clipShare = c.Share(0, 0, privacy.Grant{}, false, 0) // clip_share, or MinShare until sized
	}
	if ctr.scaled() {
		pp.scaleShare = ctr.FeatureScaleShare
	}
	return pp
}

// sized sets clip_share's default for n rows under grant g (pure: the
// plan's weights are fractions of ε; clip.Options.Share).
func (pp prepPlan) sized(c *clipOptions, n int, g privacy.Grant, pure bool) prepPlan {
	if pp.quantiles > 0 {
		pp.clipShare = c.Share(n, pp.quantiles, g, pure, pp.meanShare+pp.scaleShare)
	}
	return pp
}

// checkScalesLocatable refuses, before anything is spent,
// feature_scale=private where no column's scale can be located even if all
// ⌊n/2⌋ pair differences were non-zero (DERIVATIONS.md §10, from n, p and
// the grant only, on the plan newPlan makes): the run would spend
// feature_scale_share for nothing.
func (c *centerOptions) checkScalesLocatable(s sdk.Shape, g privacy.Grant, newPlan func(*privacy.Accountant) (*privacy.Plan, error)) error {
	if !c.scaled() || s.N < 2 || s.P < 1 {
		return nil
	}
	acct, err := privacy.NewAccountant(g)
	if err != nil {
		return err
	}
	plan, err := newPlan(acct)
	if err != nil {
		return err
	}
	b, err := plan.Budget(shareScale)
	if err != nil {
		return err
	}
	e, err := acct.Exponential("feature scale (pre-flight)", 1, b)
	if err != nil {
		return err
	}
	counts, err := scaleCounts(acct, plan, "feature scale counts (pre-flight)", s.P)
	if err != nil {
		return err
	}
	need := locatable(e.Beta(), len(kernel.DefaultGrid()), counts.Scale())
	if pairs := float64(s.N / 2); pairs < need {
		return fmt.Errorf("feature_scale=private cannot locate any column's scale at this size and budget: "+
			"a column's median pair difference needs about %.0f pairs at its share of the budget (ε %.3g per column over %d columns), and %d rows give %.0f. "+
			"Give public per-column scales instead (--column-scales FILE: each column's unit or typical spread, known to within a factor of a few, not computed from this data; "+
			"with center=pairs when columns sit far from zero), or raise the budget or feature_scale_share", need, e.Beta(), s.P, s.N, pairs)
	}
	return nil
}

// check refuses shares that leave nothing for the estimator itself.
func (pp prepPlan) check() error {
	if rest := 1 - pp.clipShare - pp.meanShare - pp.scaleShare; rest < 0.05 {
		return fmt.Errorf("clip_share %.3g + mean_share %.3g + feature_scale_share %.3g leave %.3g of the budget for the estimate itself; lower them", pp.clipShare, pp.meanShare, pp.scaleShare, rest)
	}
	return nil
}

// shares returns the plan's preprocessing shares (the quantiles under the
// exponential mechanism, the mean and the feature-scale counts under
// meanMech) and the weight left for the estimator.
func (pp prepPlan) shares(meanMech privacy.Mechanism) ([]privacy.Share, float64) {
	var out []privacy.Share
	if pp.scaleShare > 0 {
		out = append(out,
			privacy.Share{Name: shareScale, Weight: pp.scaleShare * (1 - scaleCountWeight), Steps: max(pp.features, 1), Mechanism: privacy.MechExponential},
			privacy.Share{Name: shareScaleCounts, Weight: pp.scaleShare * scaleCountWeight, Mechanism: meanMech})
	}
	if pp.quantiles > 0 {
		out = append(out, privacy.Share{Name: shareClip, Weight: pp.clipShare, Steps: pp.quantiles, Mechanism: privacy.MechExponential})
	}
	if pp.meanShare > 0 {
		out = append(out, privacy.Share{Name: shareMean, Weight: pp.meanShare, Steps: pp.meanSteps, Mechanism: meanMech})
	}
	return out, 1 - pp.clipShare - pp.meanShare - pp.scaleShare
}

// privateClip releases the q-quantile of the norms ‖x_i − μ‖ of src's
// rows as the step name of the plan's share (DERIVATIONS.md §6).
func privateClip(ctx context.Context, run *sdk.Run, plan *privacy.Plan, share, name string, src *rowsrc.Source, mu []float64, q float64) (float64, error) {
	return src.PrivateNorm(ctx, run.Acct, run.Rand, name, plan, share, mu, q)
}

// preprocessed is the outcome of the private preprocessing.
type preprocessed struct {
	src        *rowsrc.Source // the rows the estimate uses (divided by scale when scaling, pair differences with center=pairs)
	n          int            // the number of rows src holds
	pairs      bool           // src holds the differences of random pairs of rows (center=pairs)
	scale      []float64      // the private per-feature scales (nil without scaling)
	unscaled   int            // scales set to the median because they could not be located
	mu         []float64      // the private mean (nil without centring)
	meanClip   float64        // the mean's first clip (0 without centring)
	meanRadius float64        // the clip of the second step, about the first mean
	meanVar    float64        // the variance of each coordinate of the mean's noise (public)
	clip       float64        // the clip of the (centred) rows
	autoMean   bool           // meanClip came from a private quantile
	autoClip   bool           // clip came from a private quantile
	gram       *mat.SymDense  // the second moment of src's rows about mu, clipped to clip (nil: not computed here)
	clipped    int            // the rows the clip shrank (evaluation only)
}

// preprocess runs the planned preprocessing in order: the per-feature
// scales, the mean's clip and the private mean, or the pair differences of
// center=pairs, then the rows' clip (DERIVATIONS.md §5, §6, §10), and
// last the clipped second moment the estimate reads.
func preprocess(ctx context.Context, run *sdk.Run, plan *privacy.Plan, src *rowsrc.Source, c *clipOptions, ctr *centerOptions) (*preprocessed, error) {
	mech := privacy.MechGaussian // the mean's mechanism, as planned
	if m, err := plan.Mechanism(shareMean); err == nil {
		mech = m
	}
	pp := newPrepPlan(sdk.Shape{}, c, ctr, mech)
	out := &preprocessed{src: src, clip: c.Value()}
	out.n, _ = src.Dims()
	if ctr.scaled() {
		x := src.Rows()
		if x == nil {
			return nil, sdk.BadRequest("%w", errRemoteScale)
		}
		s, k, err := privateScales(ctx, run, plan, x)
		if err != nil {
			return nil, err
		}
		if x, err = divideColumns(ctx, x, s); err != nil {
			return nil, err
		}
		if src, err = rowsrc.Of(&data.Dataset{Kind: data.Rows, X: x}); err != nil {
			return nil, err
		}
		out.src, out.scale, out.unscaled = src, s, k
	}
	if ctr.pairs() {
		d, err := pairRows(ctx, run, out.src)
		if err != nil {
			return nil, err
		}
		out.src, out.pairs = d, true
		out.n, _ = d.Dims()
	}
	if ctr.private() {
		if err := out.center(ctx, run, plan, c, ctr, pp); err != nil {
			return nil, err
		}
	}
	if c.Auto() {
		cl, err := privateClip(ctx, run, plan, shareClip, "clip quantile", out.src, out.mu, c.ClipQuantile)
		if err != nil {
			return nil, err
		}
		out.clip, out.autoClip = cl, true
	}
	run.Progress("gram", 0, 1)
	g, k, err := gramOf(ctx, out.src, out.mu, out.clip)
	if err != nil {
		return nil, err
	}
	run.Progress("gram", 1, 1)
	out.gram, out.clipped = g, k
	return out, nil
}

// meanStepsFor is the number of steps of a private mean released under
// mech (center=private). Under a Gaussian plan two: a first mean of the
// rows clipped about 0, then a second of their offsets from the first,
// clipped to a radius that no longer carries the data's distance from the
// origin (DERIVATIONS.md §5.2). Under a pure Laplace split one: there
// halving a share doubles its noise (√2 under ρ), which the smaller radius
// repays only for rows far from zero.
func meanStepsFor(mech privacy.Mechanism) int {
	if mech == privacy.MechLaplace {
		return 1
	}
	return 2
}

// center releases the private mean in pp.meanSteps steps: the first
// clipped to the mean clip (mean_clip, else a numeric clip, else a private
// quantile of the raw norms), the second about the first, clipped to the
// numeric clip or a private quantile of the norms about the first mean.
func (out *preprocessed) center(ctx context.Context, run *sdk.Run, plan *privacy.Plan, c *clipOptions, ctr *centerOptions, pp prepPlan) error {
	src := out.src
	out.meanClip, out.autoMean = c.Value(), pp.meanAuto
	if ctr.MeanClip != nil {
		out.meanClip = *ctr.MeanClip
	}
	var err error
	if pp.meanAuto {
		if out.meanClip, err = privateClip(ctx, run, plan, shareClip, "clip quantile (mean)", src, nil, c.ClipQuantile); err != nil {
			return err
		}
	}
	if pp.meanSteps == 1 {
		out.mu, out.meanVar, err = privateMean(ctx, run, plan, src, "mean", nil, out.meanClip)
		return err
	}
	first, _, err := privateMean(ctx, run, plan, src, "mean (first step)", nil, out.meanClip)
	if err != nil {
		return err
	}
	out.meanRadius = c.Value()
	if c.Auto() {
		if out.meanRadius, err = privateClip(ctx, run, plan, shareClip, "clip quantile (mean, about the first step)", src, first, c.ClipQuantile); err != nil {
			return err
		}
	}
	out.mu, out.meanVar, err = privateMean(ctx, run, plan, src, "mean (second step, about the first)", first, out.meanRadius)
	return err
}

// outPairRows is the output holding the number of pair-difference rows
// (center=pairs).
const outPairRows = "pair_rows"

// pairRows returns the source of the differences (x_a − x_b)/√2 of
// disjoint pairs of src's rows, paired by a permutation drawn from the
// run's randomness (DERIVATIONS.md §5.1). It needs the rows in memory.
func pairRows(ctx context.Context, run *sdk.Run, src *rowsrc.Source) (*rowsrc.Source, error) {
	x := src.Rows()
	if x == nil {
		return nil, sdk.BadRequest("%w", errRemotePairs)
	}
	n, _ := x.Dims()
	if n < 4 {
		return nil, sdk.BadRequest("center=pairs needs at least 4 rows, have %d", n)
	}
	if err := kernel.Finite(x); err != nil { // an input error, before any step
		return nil, sdk.BadRequest("%w", err)
	}
	d, err := kernel.PairDifferences(ctx, x, run.Rand.Rand().Perm(n))
	if err != nil {
		return nil, err
	}
	return rowsrc.Of(&data.Dataset{Kind: data.Rows, X: d})
}

// report adds the preprocessing's public outputs (clip, mean_clip, mean)
// and guarantee assumptions to res.
func (pr *preprocessed) report(res *sdk.Result) {
	doc, how := "row-norm bound used (given by the user)", fmt.Sprintf("the clip γ = %.6g was chosen without looking at the data", pr.clip)
	if pr.autoClip {
		doc, how = "row-norm bound used: a private quantile of the row norms (clip=auto), released", fmt.Sprintf("the clip %.6g is a private quantile of the row norms (a declared step)", pr.clip)
	}
	res.AddScalar("clip", pr.clip, sdk.Public, doc)
	res.Guarantee.Assumptions = append(res.Guarantee.Assumptions, how)
	if pr.scale != nil {
		res.AddMatrix(pcaeval.FeatureScaleName, mat.NewDense(1, len(pr.scale), append([]float64(nil), pr.scale...)), sdk.Public,
			"private per-feature scales (1×p): every column was divided by its scale before centring and clipping; dplr transform divides new rows by them")
		res.Guarantee.Assumptions = append(res.Guarantee.Assumptions, "each feature was divided by a private scale (the median absolute difference of paired rows, a declared step per feature)")
		if pr.unscaled > 0 {
			res.AddWarning(fmt.Sprintf("feature_scale: %d of %d features have too few non-zero differences for their scale to be located at this budget (private counts) and were given the median scale", pr.unscaled, len(pr.scale)))
		}
	}
	if pr.pairs {
		res.AddScalar(outPairRows, float64(pr.n), sdk.Public, "center=pairs: the number of pair-difference rows (x_a − x_b)/√2 the estimate used (⌊n/2⌋)")
		res.Guarantee.Assumptions = append(res.Guarantee.Assumptions, fmt.Sprintf("centred by pair differences: the estimate uses the %d rows (x_a − x_b)/√2 of disjoint pairs drawn at random, independently of the data (one replaced row changes one of them); no mean is released", pr.n))
	}
	if pr.mu != nil {
		res.AddMatrix("mean", mat.NewDense(1, len(pr.mu), append([]float64(nil), pr.mu...)), sdk.Public,
			"private mean of the rows (1×p), subtracted before the estimate; dplr transform subtracts it from new rows")
		res.AddScalar("mean_clip", pr.meanClip, sdk.Public, "row-norm bound of the private mean's first step (about 0)")
		how := "was chosen without looking at the data"
		if pr.autoMean {
			how = "is a private quantile of the row norms (a declared step)"
		}
		res.Guarantee.Assumptions = append(res.Guarantee.Assumptions, fmt.Sprintf("the mean clip %.6g %s", pr.meanClip, how))
		if pr.meanRadius > 0 {
			res.AddScalar("mean_radius", pr.meanRadius, sdk.Public, "norm bound of the private mean's second step, on the rows' offsets from the first step's mean")
			res.Guarantee.Assumptions = append(res.Guarantee.Assumptions, fmt.Sprintf("the mean's second step clips the offsets from the first step's (released) mean to %.6g", pr.meanRadius))
		}
	}
	pr.warnMeanError(res)
	if pr.gram != nil {
		res.AddScalar("clipped_rows", float64(pr.clipped), sdk.Evaluation, "rows shrunk by the clip (computed from raw data: do not publish)")
	}
}

// warnMeanError warns when the private mean's expected squared error
// p·v (v its per-coordinate noise variance, public) is at least half the
// largest released eigenvalue: subtracting μ + e leaves e·eᵀ in the
// centred second moment, an eigenvalue of about ‖e‖² that then competes
// with the leading component (DERIVATIONS.md §5.2). Post-processing of
// released values only. Skipped where the eigenvalues are of a rescaled
// matrix (feature_scale=released) or were not released.
func (pr *preprocessed) warnMeanError(res *sdk.Result) {
	if pr.mu == nil || pr.meanVar <= 0 {
		return
	}
	var vals []float64
	for _, s := range res.Series {
		if s.Name == "eigenvalues" {
			vals = s.Values
		}
	}
	for _, m := range res.Matrices {
		if m.Name == pcaeval.FeatureScaleName && pr.scale == nil {
			return
		}
	}
	if len(vals) == 0 {
		return
	}
	e, top := float64(len(pr.mu))*pr.meanVar, vals[0]
	if top <= 0 || e < top/2 {
		return
	}
	res.AddWarning(fmt.Sprintf("the private mean's expected squared error (%.3g, from its released noise) is at least half the largest released eigenvalue (%.3g): "+
		"the leading components may follow the mean's error rather than the data. Columns that sit far from zero against their spread cause this; "+
		"center=pairs needs no mean, or subtract a public offset from each column first, or raise the budget or mean_share", e, top))
}

// Remote paths (sdk.RemoteEstimator): the estimators also fit a rows data
// set held elsewhere through aggregation passes, with the same code, plan
// and steps as on local rows (DERIVATIONS.md §11). feature_scale=private
// and center=pairs need the rows and are refused before any reservation.

// errRemoteScale refuses feature_scale=private on a remote data set.
var errRemoteScale = errors.New("feature_scale=private pairs rows by their position in the data, which aggregation passes do not see: use feature_scale=none")

// errRemotePairs refuses center=pairs on a remote data set.
var errRemotePairs = errors.New("center=pairs draws pairs of rows, which aggregation passes do not serve: fit the file locally, or use center=private")

// remotePasses returns the pass kinds of a clipped estimator's fit with
// these options on a remote data set, or refuses the options that need
// the rows.
func remotePasses(c *clipOptions, ctr *centerOptions, ev *evaluation) ([]string, error) {
	if ctr.scaled() {
		return nil, errRemoteScale
	}
	if ctr.pairs() {
		return nil, errRemotePairs
	}
	return ev.passes(rowsrc.Kinds(newPrepPlan(sdk.Shape{}, c, ctr, privacy.MechGaussian).quantiles > 0, ctr.private())), nil
}

// passes adds evaluate=true's pass (the unclipped moment, rows.moment) to
// kinds.
func (e *evaluation) passes(kinds []string) []string {
	if e.Evaluate.Value {
		return append(kinds, pass.RowsMoment)
	}
	return kinds
}

// Feature scaling choices.
const (
	scaleNone     = "none"
	scalePrivate  = "private"
	scaleReleased = "released"
)

// Plan shares of the per-feature scales: the quantiles (one exponential
// step per feature) and the counts of non-zero paired differences that
// say which quantiles are informative.
const (
	shareScale       = "feature scale"
	shareScaleCounts = "feature scale counts"
)

// scaleCountWeight is the counts' part of feature_scale_share.
const scaleCountWeight = 0.2

// scaleClamp bounds the released scales to [m/scaleClamp, m·scaleClamp], m
// their median (post-processing): a feature whose scale the mechanism could
// not locate (a constant one, whose utility is flat) cannot blow up the
// rows (DERIVATIONS.md §10).
const scaleClamp = 1e4

// scaleOptions is the private per-feature scaling of the worst-case
// estimators (DERIVATIONS.md §10).
type scaleOptions struct {
	FeatureScale      string  `param:"feature_scale" default:"none" choices:"none,private,released" doc:"none: use the features as they are; released (pca-analyze-gauss): correlation PCA at no extra cost: divide each feature by the square root of its variance read off the released noisy covariance (its diagonal, floored at twice the noise deviation), post-processing that spends nothing; for tables in mixed units, with --column-scales, once the variances stand well above the noise (n·ε of several thousand; with center=pairs when columns sit far from zero); private: divide each feature by a private estimate of its spread (the median absolute difference between paired rows, from feature_scale_share of the budget) before centring and clipping; it needs thousands of rows per feature and is refused before spending where it cannot locate any scale. The scales are released as output feature_scale (1×p) and dplr transform divides new rows by them. When all columns share one unit (pixels), scaling reweights them and can cost accuracy"`
	FeatureScaleShare float64 `param:"feature_scale_share" default:"0.1" min:"0.001" max:"0.5" doc:"with feature_scale=private: the fraction of the budget spent on the p per-feature scales (split evenly over the features)"`
}

// scaled reports feature_scale=private.
func (s *scaleOptions) scaled() bool { return s.FeatureScale == scalePrivate }

// released reports feature_scale=released.
func (s *scaleOptions) released() bool { return s.FeatureScale == scaleReleased }

// pairDiffs returns, for feature j, the non-zero |x_i,j − x_(i+h),j| over
// the pairs (i, i + h), h = ⌊n/2⌋, i < h: every row is in at most one pair.
func pairDiffs(x *mat.Dense, j int, buf []float64) []float64 {
	n, _ := x.Dims()
	h := n / 2
	buf = buf[:0]
	for i := 0; i < h; i++ {
		if d := math.Abs(x.At(i, j) - x.At(i+h, j)); d > 0 {
			buf = append(buf, d)
		}
	}
	return buf
}

// privateScales releases one scale per feature, the private median of its
// non-zero paired differences, and the numbers of those differences under
// the plan's counts mechanism (DERIVATIONS.md §10). A feature whose scale
// cannot be located gets the median of the others; it returns the scales
// and how many were replaced.
func privateScales(ctx context.Context, run *sdk.Run, plan *privacy.Plan, x *mat.Dense) ([]float64, int, error) {
	n, p := x.Dims()
	if n < 2 {
		return nil, 0, fmt.Errorf("feature_scale=private needs at least 2 rows")
	}
	if err := kernel.Finite(x); err != nil { // an input error, before any step
		return nil, 0, err
	}
	grid := kernel.DefaultGrid()
	b, err := plan.Budget(shareScale)
	if err != nil {
		return nil, 0, err
	}
	scales := make([]float64, p)
	counts := make([]float64, p)
	buf := make([]float64, 0, n/2)
	var beta float64
	for j := 0; j < p; j++ {
		if err := ctx.Err(); err != nil {
			return nil, 0, fmt.Errorf("feature scales: %w", err)
		}
		d := pairDiffs(x, j, buf)
		counts[j] = float64(len(d))
		rel, err := run.Acct.Exponential(fmt.Sprintf("feature scale %d", j+1), 1, b)
		if err != nil {
			return nil, 0, err
		}
		err = rel.Sample(func(bt float64) error {
			beta = bt
			k, err := quantile.Sample(quantile.Utilities(d, 0.5, grid), bt, run.Rand)
			scales[j] = grid[k]
			return err
		})
		if err != nil {
			return nil, 0, err
		}
	}
	rel, err := scaleCounts(run.Acct, plan, "feature scale: non-zero pair counts", p)
	if err != nil {
		return nil, 0, err
	}
	if err := rel.Add(run.Rand, counts); err != nil {
		return nil, 0, err
	}
	replaced := replaceUnlocated(scales, counts, locatable(beta, len(grid), rel.Scale()))
	clampScales(scales)
	return scales, replaced, nil
}

// scaleCounts declares the release of the p counts of non-zero paired
// differences from the plan's counts share: Gaussian with ℓ2 sensitivity
// √p, or Laplace with ℓ1 sensitivity p (one replaced row changes each count
// by at most one).
func scaleCounts(acct *privacy.Accountant, plan *privacy.Plan, name string, p int) (*privacy.Release, error) {
	b, err := plan.Budget(shareScaleCounts)
	if err != nil {
		return nil, err
	}
	if b.Mechanism == privacy.MechLaplace {
		return acct.Laplace(name, float64(p), p, b)
	}
	return acct.Gaussian(name, math.Sqrt(float64(p)), p, b)
}

// locatable is the smallest noisy count of non-zero differences at which a
// feature's released median is trusted, 2·ln(20G)/(β·q) plus two standard
// deviations of the count's noise (DERIVATIONS.md §10).
func locatable(beta float64, gridSize int, countSD float64) float64 {
	const q = 0.5
	return 2*math.Log(20*float64(gridSize))/(beta*q) + 2*countSD
}

// replaceUnlocated sets every scale whose noisy count is below min to the
// median of the others (all to 1 when none is located) and returns how
// many it replaced.
func replaceUnlocated(scales, counts []float64, min float64) int {
	var ok []float64
	for j, c := range counts {
		if c >= min {
			ok = append(ok, scales[j])
		}
	}
	fill := 1.0
	if len(ok) > 0 {
		sort.Float64s(ok)
		fill = ok[len(ok)/2]
	}
	replaced := 0
	for j, c := range counts {
		if c < min {
			scales[j] = fill
			replaced++
		}
	}
	return replaced
}

// clampScales limits every scale to [m/scaleClamp, m·scaleClamp], m the
// median scale.
func clampScales(s []float64) {
	sorted := append([]float64(nil), s...)
	sort.Float64s(sorted)
	m := sorted[len(sorted)/2]
	for j, v := range s {
		s[j] = math.Min(math.Max(v, m/scaleClamp), m*scaleClamp)
	}
}

// divideColumns returns a copy of x with column j divided by s[j].
func divideColumns(ctx context.Context, x *mat.Dense, s []float64) (*mat.Dense, error) {
	n, p := x.Dims()
	out := mat.NewDense(n, p, nil)
	for i := 0; i < n; i++ {
		if i%8192 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("feature scaling: %w", err)
			}
		}
		dst := out.RawRowView(i)
		for j, v := range x.RawRowView(i)[:p] {
			dst[j] = v / s[j]
		}
	}
	return out, nil
}
