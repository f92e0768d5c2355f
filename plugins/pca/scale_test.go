package pca

import (
	"context"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/evaluate"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/engine/sdk/sdktest"
	"github.com/dplr/dplr/plugins/internal/pcaeval"
	"github.com/dplr/dplr/plugins/internal/project"
)

// multiScale draws n rows z = f·Wᵀ + e in p columns (W a random p×r
// orthonormal basis, f ~ N(0, diag(lambda)), e ~ N(0, I)), shifted by a
// mean and then multiplied per feature by d_j = 10^(−3j/(p−1)), so that
// the features' scales span a factor 10³. It returns x = (z + m)·D and z.
func multiScale(n, p int, lambda []float64, seed uint64) (x, z *mat.Dense, d []float64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	r := len(lambda)
	g := mat.NewDense(p, r, nil)
	for i := 0; i < p; i++ {
		for k := 0; k < r; k++ {
			g.Set(i, k, rng.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(g)
	var w mat.Dense
	qr.QTo(&w)
	d = make([]float64, p)
	for j := range d {
		d[j] = math.Pow(10, -3*float64(j)/float64(p-1))
	}
	x, z = mat.NewDense(n, p, nil), mat.NewDense(n, p, nil)
	for i := 0; i < n; i++ {
		f := make([]float64, r)
		for k := range f {
			f[k] = math.Sqrt(lambda[k]) * rng.NormFloat64()
		}
		for j := 0; j < p; j++ {
			v := rng.NormFloat64()
			for k := range f {
				v += f[k] * w.At(j, k)
			}
			z.Set(i, j, v)
			x.Set(i, j, (v+3)*d[j])
		}
	}
	return x, z, d
}

// standardRatio is the centred captured-variance ratio, in the space of
// z = x·diag(1/d) (x's features divided by public or evaluation-only
// scales d), of the scores x·diag(1/s)·U an estimate produces: they span
// diag(d/s)·U in z's space.
func standardRatio(t testing.TB, z *mat.Dense, d, s []float64, u *mat.Dense) float64 {
	t.Helper()
	p, r := u.Dims()
	b := mat.NewDense(p, r, nil)
	for j := 0; j < p; j++ {
		for k := 0; k < r; k++ {
			b.Set(j, k, d[j]/s[j]*u.At(j, k))
		}
	}
	var qr mat.QR
	qr.Factorize(b)
	var q mat.Dense
	qr.QTo(&q)
	basis := q.Slice(0, p, 0, r)
	c := centredCov(t, z)
	top, _, err := backend.Gonum{}.EigSymTop(c, r)
	require.NoError(t, err)
	return evaluate.CapturedRatio(c, basis, top)
}

// standardised returns x with every column divided by its empirical
// standard deviation, and those deviations (evaluation only: what
// scikit-learn's StandardScaler would use).
func standardised(x *mat.Dense) (*mat.Dense, []float64) {
	n, p := x.Dims()
	sdv := make([]float64, p)
	for j := 0; j < p; j++ {
		var m, s float64
		for i := 0; i < n; i++ {
			m += x.At(i, j) / float64(n)
		}
		for i := 0; i < n; i++ {
			s += (x.At(i, j) - m) * (x.At(i, j) - m) / float64(n)
		}
		sdv[j] = math.Sqrt(s)
	}
	z, _ := divideColumns(context.Background(), x, sdv)
	return z, sdv
}

// centredCov is the covariance of the rows of z about their mean.
func centredCov(t testing.TB, z *mat.Dense) *mat.SymDense {
	t.Helper()
	n, p := z.Dims()
	g, _, err := Gram(context.Background(), backend.Gonum{}, z, nil, 0)
	require.NoError(t, err)
	m := make([]float64, p)
	for i := 0; i < n; i++ {
		for j, v := range z.RawRowView(i) {
			m[j] += v / float64(n)
		}
	}
	return evaluate.Centre(g, m)
}

// ones is a slice of n ones.
func ones(n int) []float64 {
	s := make([]float64, n)
	for j := range s {
		s[j] = 1
	}
	return s
}

func medianOf(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Features on scales 10³ apart: scored on the standardised data (the
// target of scaling, as scikit-learn's StandardScaler + PCA), Analyze
// Gauss (clip=auto, center=private, ε = 1) with feature_scale=private
// captures nearly all the standardised structure, without scaling only
// what the largest features hold. Medians over 10 fresh-noise runs
// (measured: 0.995 against 0.214; non-private PCA of the standardised
// data scores 1 by construction).
func TestFeatureScaleImprovesMultiScale(t *testing.T) {
	x, _, _ := multiScale(20000, 30, []float64{30, 20, 10}, 5)
	z, sdv := standardised(x)
	ds := &data.Dataset{Kind: data.Rows, X: x}
	var with, without []float64
	for seed := uint64(1); seed <= 10; seed++ {
		s := seed
		res, _, err := sdk.RunLocal(context.Background(), AnalyzeGauss{}, ds, map[string]string{"rank": "3", "center": "private", "feature_scale": "private"}, approx(1, 1e-6), sdk.LocalOptions{Seed: &s})
		require.NoError(t, err)
		sc := matrix(t, res, "feature_scale").RawRowView(0)
		with = append(with, standardRatio(t, z, sdv, sc, matrix(t, res, "U")))
		res, _, err = sdk.RunLocal(context.Background(), AnalyzeGauss{}, ds, map[string]string{"rank": "3", "center": "private"}, approx(1, 1e-6), sdk.LocalOptions{Seed: &s})
		require.NoError(t, err)
		without = append(without, standardRatio(t, z, sdv, ones(30), matrix(t, res, "U")))
	}
	t.Logf("standardised centred captured-variance ratio, median of 10: feature_scale=private %.4f, none %.4f", medianOf(with), medianOf(without))
	assert.Greater(t, medianOf(with), medianOf(without)+0.3)
	assert.Greater(t, medianOf(with), 0.9)
}

// feature_scale=private passes the core conformance suite on both
// estimators that offer it; a share total leaving too little, and a size
// and budget at which no column's scale can be located (a table of 400
// rows at ε = 1: it would release the median scale for every column and
// spend feature_scale_share for nothing), are refused before any step, and
// so is feature_scale=released on pca-amin, which releases no noisy
// covariance to read the variances from.
func TestFeatureScaleConformance(t *testing.T) {
	x, _, _ := multiScale(5000, 8, []float64{12, 6}, 6)
	ds := &data.Dataset{Kind: data.Rows, X: x}
	small, _, _ := multiScale(400, 8, []float64{12, 6}, 6)
	dsSmall := &data.Dataset{Kind: data.Rows, X: small}
	scaled := map[string]string{"rank": "2", "center": "private", "feature_scale": "private"}
	sdktest.Run(t, AnalyzeGauss{},
		sdktest.Case{Name: "scaled, centred", Data: ds, Params: map[string]string{"rank": "2", "center": "private", "feature_scale": "private", "evaluate": "true"}, Grant: approx(1, 1e-6)},
		sdktest.Case{Name: "shares too large", Data: ds, Params: map[string]string{"rank": "2", "center": "private", "feature_scale": "private", "feature_scale_share": "0.5", "clip_share": "0.3", "mean_share": "0.2"}, Grant: approx(1, 1e-6), Refuse: "feature_scale_share"},
		sdktest.Case{Name: "scales cannot be located", Data: dsSmall, Params: scaled, Grant: approx(1, 1e-6), Refuse: "--column-scales"},
	)
	sdktest.Run(t, Amin{},
		sdktest.Case{Name: "scaled", Data: ds, Params: map[string]string{"rank": "2", "feature_scale": "private"}, Grant: pure(4)},
		sdktest.Case{Name: "scales cannot be located", Data: dsSmall, Params: scaled, Grant: pure(1), Refuse: "--column-scales"},
		sdktest.Case{Name: "released", Data: ds, Params: map[string]string{"rank": "2", "feature_scale": scaleReleased}, Grant: pure(1), Refuse: "feature_scale=released"},
	)
}

// The scales are declared as one exponential step per feature before the
// clip quantiles and the mean, released as a 1×p public output, and at a
// large budget each is the median absolute difference of paired rows:
// 0.954·sd for a Gaussian feature (√2·Φ⁻¹(3/4) ≈ 0.954), here within the
// grid's 4.4 % steps and the sample's spread.
func TestFeatureScaleStepsAndValues(t *testing.T) {
	x, _, _ := multiScale(20000, 6, []float64{4}, 7)
	_, sdv := standardised(x)
	ds := &data.Dataset{Kind: data.Rows, X: x}
	seed := uint64(3)
	res, acct, err := sdk.RunLocal(context.Background(), AnalyzeGauss{}, ds, map[string]string{"rank": "1", "center": "private", "feature_scale": "private"}, zcdp(1e6), sdk.LocalOptions{Seed: &seed})
	require.NoError(t, err)
	var names []string
	for _, s := range acct.Steps() {
		names = append(names, s.Name)
		require.NoError(t, privacy.VerifyStep(s), s.Name)
	}
	assert.Equal(t, []string{"feature scale 1", "feature scale 2", "feature scale 3", "feature scale 4", "feature scale 5", "feature scale 6", "feature scale: non-zero pair counts",
		"clip quantile (mean)", "mean (first step)", "clip quantile (mean, about the first step)", "mean (second step, about the first)", "clip quantile", "second-moment matrix Σ̂ + E"}, names)
	sc := matrix(t, res, "feature_scale")
	r, p := sc.Dims()
	require.Equal(t, []int{1, 6}, []int{r, p})
	for j := 0; j < p; j++ {
		assert.InEpsilon(t, 0.954*sdv[j], sc.At(0, j), 0.08, "feature %d", j+1)
	}
	o := &analyzeGaussOptions{}
	o.FeatureScale = scalePrivate
	assert.Equal(t, footprint(sdk.Shape{N: 20000, P: 6})+8*20000*6, o.Footprint(sdk.Shape{N: 20000, P: 6}))
}

// A constant feature (no non-zero paired difference: a flat utility) gets a
// random grid scale, which the clamp keeps within 10⁴ of the median scale.
func TestClampScales(t *testing.T) {
	s := []float64{1, 2, 1e-6, 3, 1e6}
	clampScales(s)
	assert.Equal(t, []float64{1, 2, 2e-4, 3, 2e4}, s)
}

// A mostly-zero feature (10 non-zero rows in 20000) has too few non-zero
// differences for its median to be located at ε = 1 (about 2000 are
// needed here): it gets the median scale and the result says how many
// features were treated so; the located features keep their own scales.
func TestFeatureScaleSparseFeature(t *testing.T) {
	x, _, _ := multiScale(20000, 8, []float64{12, 6}, 8)
	n, _ := x.Dims()
	for i := 0; i < n; i++ {
		v := 0.0
		if i%2000 == 0 {
			v = 100
		}
		x.Set(i, 7, v)
	}
	ds := &data.Dataset{Kind: data.Rows, X: x}
	seed := uint64(4)
	res, _, err := sdk.RunLocal(context.Background(), AnalyzeGauss{}, ds, map[string]string{"rank": "2", "feature_scale": "private"}, approx(1, 1e-6), sdk.LocalOptions{Seed: &seed})
	require.NoError(t, err)
	sc := matrix(t, res, "feature_scale").RawRowView(0)
	assert.Equal(t, medianOf(sc[:7]), sc[7], "the sparse feature gets the median of the located scales")
	assert.Contains(t, res.Warnings[len(res.Warnings)-1], "1 of 8 features")
}

// replaceUnlocated fills unlocated scales with the located ones' median,
// and sets every scale to 1 when none is located.
func TestReplaceUnlocated(t *testing.T) {
	s := []float64{1, 4, 9, 100}
	assert.Equal(t, 1, replaceUnlocated(s, []float64{50, 50, 50, 3}, 10))
	assert.Equal(t, []float64{1, 4, 9, 4}, s)
	s = []float64{1, 4}
	assert.Equal(t, 2, replaceUnlocated(s, []float64{3, 3}, 10))
	assert.Equal(t, []float64{1, 1}, s)
}

// mixedUnits is multiScale's latent z (a 2-spike structure in 6 columns)
// with each column then given its own unit and offset: a table in mixed
// units, every column's variance well above the noise of the tests below.
func mixedUnits(n int, seed uint64) *mat.Dense {
	_, z, _ := multiScale(n, 6, []float64{12, 6}, seed)
	unit := []float64{1, 3, 0.5, 10, 0.2, 2}
	x := mat.NewDense(n, 6, nil)
	for i := 0; i < n; i++ {
		for j, u := range unit {
			x.Set(i, j, (z.At(i, j)+5)*u)
		}
	}
	return x
}

// projDist is ‖UUᵀ − VVᵀ‖_F for orthonormal U and V.
func projDist(u, v *mat.Dense) float64 {
	var a, b mat.Dense
	a.Mul(u, u.T())
	b.Mul(v, v.T())
	a.Sub(&a, &b)
	return mat.Norm(&a, 2)
}

// feature_scale=released is post-processing of the released second moment:
// with the same seed its privacy steps and guarantee are exactly
// feature_scale=none's, and its outputs follow from none's release Σ̂ + E
// alone: feature_scale = √max(diag, 2σ), Sigma that matrix standardised by
// it, U its top eigenvectors, and the mean divided by feature_scale.
func TestFeatureScaleReleasedIsPostProcessing(t *testing.T) {
	ds := &data.Dataset{Kind: data.Rows, X: mixedUnits(2000, 1)}
	for _, g := range []privacy.Grant{approx(1, 1e-6), zcdp(0.05)} {
		seed := uint64(5)
		raw := map[string]string{"rank": "2", "center": "private", "output_sigma": "true"}
		none, nacct, err := sdk.RunLocal(context.Background(), AnalyzeGauss{}, ds, raw, g, sdk.LocalOptions{Seed: &seed})
		require.NoError(t, err)
		raw["feature_scale"] = scaleReleased
		rel, racct, err := sdk.RunLocal(context.Background(), AnalyzeGauss{}, ds, raw, g, sdk.LocalOptions{Seed: &seed})
		require.NoError(t, err)
		assert.Equal(t, nacct.Steps(), racct.Steps(), "the same steps and charges")
		assert.Equal(t, none.Guarantee, rel.Guarantee)
		sigma := matrix(t, none, "Sigma") // the release
		fs := make([]float64, 6)
		for j := range fs {
			fs[j] = math.Sqrt(math.Max(sigma.At(j, j), 2*scalar(t, rel, "noise_sd")))
		}
		assert.Equal(t, fs, matrix(t, rel, pcaeval.FeatureScaleName).RawRowView(0))
		corr := mat.NewSymDense(6, nil)
		for i := 0; i < 6; i++ {
			for j := i; j < 6; j++ {
				corr.SetSym(i, j, sigma.At(i, j)/(fs[i]*fs[j]))
				assert.InDelta(t, corr.At(i, j), matrix(t, rel, "Sigma").At(i, j), 1e-12, "the same release, standardised")
			}
		}
		_, v, err := backend.Gonum{}.EigSymTop(corr, 2)
		require.NoError(t, err)
		assert.Less(t, projDist(matrix(t, rel, "U"), v), 1e-9)
		for j, m := range matrix(t, none, "mean").RawRowView(0) {
			assert.InDelta(t, m/fs[j], matrix(t, rel, "mean").At(0, j), 1e-12)
		}
	}
	sdktest.Run(t, AnalyzeGauss{},
		sdktest.Case{Name: "released, centred", Data: ds, Params: map[string]string{"rank": "2", "center": "private", "feature_scale": scaleReleased, "evaluate": "true"}, Grant: approx(1, 1e-6)},
	)
}

// As ε → ∞ (ρ = 10¹², a clip above every row norm) feature_scale=released
// is correlation PCA, StandardScaler + PCA: the released scales are the
// columns' deviations, the components span the correlation matrix's top
// eigenvectors, and dplr transform's scores of new rows are the
// standardised rows' projections on them, up to each component's sign.
func TestFeatureScaleReleasedLimit(t *testing.T) {
	x := mixedUnits(2000, 2)
	raw := map[string]string{"rank": "2", "center": "private", "clip": "500", "mean_clip": "500", "feature_scale": scaleReleased}
	seed := uint64(6)
	res, _, err := sdk.RunLocal(context.Background(), AnalyzeGauss{}, &data.Dataset{Kind: data.Rows, X: x}, raw, zcdp(1e12), sdk.LocalOptions{Seed: &seed})
	require.NoError(t, err)
	z, sdv := standardised(x)
	_, v, err := backend.Gonum{}.EigSymTop(centredCov(t, z), 2)
	require.NoError(t, err)
	fs := matrix(t, res, pcaeval.FeatureScaleName).RawRowView(0)
	noise := scalar(t, res, "noise_sd") // a variance off by at most 4 deviations moves its root by 2·noise/sd
	for j := range sdv {
		assert.InDelta(t, sdv[j], fs[j], 2*noise/sdv[j], "column %d", j)
	}
	d := projDist(matrix(t, res, "U"), v)
	t.Logf("‖UUᵀ − VVᵀ‖ against StandardScaler + PCA: %.3g", d)
	assert.Less(t, d, 1e-3)

	xn := mixedUnits(300, 3)
	got, err := project.Transform(modelOf(res, raw), nil, xn)
	require.NoError(t, err)
	n, p := xn.Dims()
	mu := make([]float64, p)
	for j := range mu {
		mu[j] = mat.Sum(x.ColView(j)) / 2000
	}
	zn := mat.NewDense(n, p, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < p; j++ {
			zn.Set(i, j, (xn.At(i, j)-mu[j])/sdv[j])
		}
	}
	var want mat.Dense
	want.Mul(zn, v)
	for k := 0; k < 2; k++ {
		sign := math.Copysign(1, mat.Dot(got.M.ColView(k), want.ColView(k)))
		for i := 0; i < n; i++ {
			assert.InDelta(t, want.At(i, k), sign*got.M.At(i, k), 1e-2*(1+math.Abs(want.At(i, k))), "row %d, component %d", i, k)
		}
	}
}

// With public column scales known only to within a factor of 2 (what
// --column-scales gives on a mixed-unit table), feature_scale=released
// recovers the standardised structure that the mis-scaled fit misses, at
// the same cost: scored in the standardised space, medians of 10
// fresh-noise runs of Analyze Gauss (clip=auto, center=private, ε = 1).
func TestFeatureScaleReleasedMisScaled(t *testing.T) {
	x := mixedUnits(1000, 4)
	n, p := x.Dims()
	rng := rand.New(rand.NewPCG(4, 4))
	_, sdv := standardised(x)
	pub := make([]float64, p)
	for j := range pub {
		pub[j] = sdv[j] * math.Pow(2, 2*rng.Float64()-1)
	}
	xs, _ := divideColumns(context.Background(), x, pub)
	z, sd2 := standardised(xs)
	ds := &data.Dataset{Kind: data.Rows, X: xs}
	var with, without []float64
	for seed := uint64(1); seed <= 10; seed++ {
		s := seed
		raw := map[string]string{"rank": "2", "center": "private"}
		res, _, err := sdk.RunLocal(context.Background(), AnalyzeGauss{}, ds, raw, approx(1, 1e-6), sdk.LocalOptions{Seed: &s})
		require.NoError(t, err)
		without = append(without, standardRatio(t, z, sd2, ones(p), matrix(t, res, "U")))
		raw["feature_scale"] = scaleReleased
		res, _, err = sdk.RunLocal(context.Background(), AnalyzeGauss{}, ds, raw, approx(1, 1e-6), sdk.LocalOptions{Seed: &s})
		require.NoError(t, err)
		with = append(with, standardRatio(t, z, sd2, matrix(t, res, pcaeval.FeatureScaleName).RawRowView(0), matrix(t, res, "U")))
	}
	t.Logf("n = %d: standardised captured-variance ratio, median of 10: released %.4f, none %.4f", n, medianOf(with), medianOf(without))
	assert.Greater(t, medianOf(with), medianOf(without))
}
