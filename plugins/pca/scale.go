package pca

import (
	"context"
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	rowclip "github.com/dplr/dplr/plugins/internal/clip"
	"github.com/dplr/dplr/plugins/internal/quantile"
)

// Feature scaling choices.
const (
	scaleNone    = "none"
	scalePrivate = "private"
)

// shareScale names the plan share that pays for the per-feature scales.
const shareScale = "feature scale"

// scaleClamp bounds the released scales to [m/scaleClamp, m·scaleClamp], m
// their median (post-processing): a feature whose scale the mechanism could
// not locate (a constant one, whose utility is flat) cannot blow up the
// rows (DERIVATIONS.md §10).
const scaleClamp = 1e4

// scaleOptions is the private per-feature scaling of the worst-case
// estimators (DERIVATIONS.md §10).
type scaleOptions struct {
	FeatureScale      string  `param:"feature_scale" default:"none" choices:"none,private" doc:"none: use the features as they are; private: for features on very different scales, divide each feature by a private estimate of its spread (the median absolute difference between paired rows, from feature_scale_share of the budget) before centring and clipping, so that PCA works on comparable features without standardising with the empirical mean and deviation. The scales are released as output feature_scale (1×p) and dplr transform divides new rows by them"`
	FeatureScaleShare float64 `param:"feature_scale_share" default:"0.1" min:"0.001" max:"0.5" doc:"with feature_scale=private: the fraction of the budget spent on the p per-feature scales (split evenly over the features)"`
}

// scaled reports feature_scale=private.
func (s *scaleOptions) scaled() bool { return s.FeatureScale == scalePrivate }

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

// privateScales releases one scale per feature: the exponential-mechanism
// median of the non-zero paired differences on the public log grid (one
// declared step per feature, each of sensitivity 1, DERIVATIONS.md §10),
// then clamps them around their median (post-processing).
func privateScales(ctx context.Context, run *sdk.Run, plan *privacy.Plan, x *mat.Dense) ([]float64, error) {
	n, p := x.Dims()
	if n < 2 {
		return nil, fmt.Errorf("feature_scale=private needs at least 2 rows")
	}
	if err := rowclip.Finite(x); err != nil { // an input error, before any step
		return nil, err
	}
	grid, err := quantile.Grid(quantile.DefaultLow, quantile.DefaultHigh, quantile.DefaultPerOctave)
	if err != nil {
		return nil, err
	}
	b, err := plan.Budget(shareScale)
	if err != nil {
		return nil, err
	}
	scales := make([]float64, p)
	buf := make([]float64, 0, n/2)
	for j := 0; j < p; j++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("feature scales: %w", err)
		}
		d := pairDiffs(x, j, buf)
		rel, err := run.Acct.Exponential(fmt.Sprintf("feature scale %d", j+1), 1, b)
		if err != nil {
			return nil, err
		}
		err = rel.Sample(func(beta float64) error {
			k, err := quantile.Sample(quantile.Utilities(d, 0.5, grid), beta, run.Rand)
			scales[j] = grid[k]
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	clampScales(scales)
	return scales, nil
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

// scaledRows returns the rows an evaluation should score: the raw rows, or
// with a released feature_scale output, the rows divided by it (the space
// the estimator worked in).
func scaledRows(ctx context.Context, x *mat.Dense, res *sdk.Result) (*mat.Dense, error) {
	for _, m := range res.Matrices {
		if m.Name == outFeatureScale {
			return divideColumns(ctx, x, m.M.RawRowView(0))
		}
	}
	return x, nil
}

// outFeatureScale is the output holding the released per-feature scales.
const outFeatureScale = "feature_scale"
