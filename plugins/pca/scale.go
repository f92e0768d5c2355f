package pca

import (
	"context"
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/pcaeval"
	"github.com/dplr/dplr/plugins/internal/quantile"
)

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
	if len(ok) == 0 {
		for j := range scales {
			scales[j] = 1
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

// outFeatureScale is the output holding the released per-feature scales.
const outFeatureScale = pcaeval.FeatureScaleName
