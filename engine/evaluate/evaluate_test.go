package evaluate

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

func TestSinThetaKnownAngles(t *testing.T) {
	for _, theta := range []float64{0, 0.1, math.Pi / 6, math.Pi / 2} {
		u := mat.NewDense(3, 2, []float64{1, 0, 0, 1, 0, 0})
		v := mat.NewDense(3, 2, []float64{1, 0, 0, math.Cos(theta), 0, math.Sin(theta)})
		s, f, err := SinTheta(u, v)
		require.NoError(t, err)
		assert.InDelta(t, math.Sin(theta), s, 1e-12)
		assert.InDelta(t, math.Sin(theta), f, 1e-12)
	}
	// Rotation within the subspace does not count.
	u := mat.NewDense(3, 2, []float64{1, 0, 0, 1, 0, 0})
	c, sn := math.Cos(0.7), math.Sin(0.7)
	v := mat.NewDense(3, 2, []float64{c, -sn, sn, c, 0, 0})
	s, f, err := SinTheta(u, v)
	require.NoError(t, err)
	assert.InDelta(t, 0, s, 1e-7)
	assert.InDelta(t, 0, f, 1e-7)
	_, _, err = SinTheta(mat.NewDense(2, 1, nil), mat.NewDense(3, 1, nil))
	assert.Error(t, err)
}

func TestAgainst(t *testing.T) {
	u := mat.NewDense(2, 1, []float64{1, 0})
	m := mat.NewDense(1, 2, []float64{3, 4})
	m2 := mat.NewDense(1, 2, []float64{3, 5})
	got := Against(map[string]*mat.Dense{"U": u, "M": m2, "extra": m}, map[string]*mat.Dense{"U": u, "M": m, "missing": m})
	require.Len(t, got, 3)
	assert.Equal(t, "M.rel_frobenius", got[0].Name)
	assert.InDelta(t, 0.2, got[0].Value, 1e-12)
	assert.Equal(t, "U.sin_theta_spectral", got[1].Name)
	assert.InDelta(t, 0, got[1].Value, 1e-12)
	for _, m := range got {
		assert.Equal(t, "evaluation", m.Release, "truth metrics are labelled evaluation-only")
	}
}

// Non-orthonormal inputs (such as the users' heads of fedrep, n×k with
// arbitrary scale) are compared by their column spans: the distance must
// not depend on the scale or mixing of the columns, and must not collapse
// to 0 for different spans.
func TestSinThetaNonOrthonormal(t *testing.T) {
	cases := []struct {
		name    string
		u, v    *mat.Dense
		want    float64
		wantErr bool
	}{
		{"scaled same span", mat.NewDense(3, 2, []float64{5, 0, 0, 7, 0, 0}), mat.NewDense(3, 2, []float64{1, 1, 1, -1, 0, 0}), 0, false},
		{"large heads, different span", mat.NewDense(3, 1, []float64{30, 0, 0}), mat.NewDense(3, 1, []float64{0, 40, 0}), 1, false},
		{"45 degrees, unnormalised", mat.NewDense(2, 1, []float64{3, 0}), mat.NewDense(2, 1, []float64{2, 2}), math.Sqrt(0.5), false},
		{"rank-deficient", mat.NewDense(3, 2, []float64{1, 2, 1, 2, 1, 2}), mat.NewDense(3, 2, []float64{1, 0, 0, 1, 0, 0}), 0, true},
		{"zero column", mat.NewDense(3, 1, []float64{0, 0, 0}), mat.NewDense(3, 1, []float64{1, 0, 0}), 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, f, err := SinTheta(tc.u, tc.v)
			if tc.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.InDelta(t, tc.want, s, 1e-7)
			assert.GreaterOrEqual(t, f, s-1e-12, "‖sin Θ‖_F ≥ ‖sin Θ‖₂")
		})
	}
}

// sin Θ keeps full relative accuracy for tiny angles, and for equal ranks
// ‖UUᵀ − VVᵀ‖₂ = ‖sin Θ‖₂, ‖UUᵀ − VVᵀ‖_F = √2·‖sin Θ‖_F.
func TestSinThetaConvention(t *testing.T) {
	for _, theta := range []float64{1e-12, 1e-6, 0.3} {
		u := mat.NewDense(3, 1, []float64{1, 0, 0})
		v := mat.NewDense(3, 1, []float64{math.Cos(theta), math.Sin(theta), 0})
		s, f, err := SinTheta(u, v)
		require.NoError(t, err)
		assert.InEpsilon(t, math.Sin(theta), s, 1e-9)
		assert.InEpsilon(t, math.Sin(theta), f, 1e-9)
		var pu, pv, d mat.Dense
		pu.Mul(u, u.T())
		pv.Mul(v, v.T())
		d.Sub(&pu, &pv)
		assert.InEpsilon(t, math.Sqrt2*f, mat.Norm(&d, 2), 1e-6)
	}
	// Different ranks: the smaller space's angles to the larger one.
	u := mat.NewDense(3, 1, []float64{0, 0, 1})
	v := mat.NewDense(3, 2, []float64{1, 0, 0, 1, 0, 0})
	s, f, err := SinTheta(u, v)
	require.NoError(t, err)
	assert.InDelta(t, 1, s, 1e-12)
	assert.InDelta(t, 1, f, 1e-12)
}

func TestQuantilesAndSlope(t *testing.T) {
	cases := []struct {
		v    []float64
		q    float64
		want float64
	}{
		{[]float64{4, 1, 3, 2}, 0.5, 2.5},
		{[]float64{3, 1, 2}, 0.5, 2},
		{[]float64{1, 2, 3, 4, 5}, 0.25, 2},
		{[]float64{1, 2}, 1, 2},
		{[]float64{7}, 0.9, 7},
	}
	for _, tc := range cases {
		assert.InDelta(t, tc.want, Quantile(tc.q, tc.v), 1e-12, "%v", tc.v)
	}
	assert.True(t, math.IsNaN(Median(nil)))
	assert.Equal(t, [3]float64{1.75, 2.5, 3.25}, Quartiles([]float64{1, 2, 3, 4}))
	x := []float64{1, 2, 4, 8}
	y := []float64{3, 1.5, 0.75, 0.375}
	assert.InDelta(t, -1, LogSlope(x, y), 1e-12)
}

func TestCapturedVarianceAndSpectralNorm(t *testing.T) {
	s := mat.NewSymDense(3, []float64{3, 0, 0, 0, 2, 0, 0, 0, 1})
	u := mat.NewDense(3, 2, []float64{1, 0, 0, 1, 0, 0})
	assert.InDelta(t, 5, CapturedVariance(s, u), 1e-12)
	n, err := SpectralNorm(mat.NewDense(2, 2, []float64{1, 2, 2, -3}))
	require.NoError(t, err)
	assert.InDelta(t, 1+math.Sqrt(8), n, 1e-12) // eigenvalues −1 ± √8
	_, err = SpectralNorm(mat.NewDense(2, 3, nil))
	assert.Error(t, err)
}

// The centred ratio of the empirical covariance's own top-r eigenvectors is
// 1; a subspace holding only the mean direction scores high uncentred and
// low centred (the flattering case the uncentred figure hides).
func TestCapturedRatios(t *testing.T) {
	// Rows: a large mean along e1, variance along e2 (big) and e3 (small).
	x := mat.NewDense(400, 3, nil)
	for i := 0; i < 400; i++ {
		s2, s3 := 1.0, 0.3
		if i%2 == 1 {
			s2, s3 = -s2, -s3
		}
		if i%4 >= 2 {
			s3 = -s3
		}
		x.SetRow(i, []float64{10, s2, s3})
	}
	// The ratios the PCA estimators report (CapturedRatio on the centred
	// covariance Centre(XᵀX/n, mean), and on XᵀX/n itself).
	s := mat.NewSymDense(3, nil)
	s.SymOuterK(1.0/400, x.T())
	mean := make([]float64, 3)
	for j := range mean {
		mean[j] = mat.Sum(x.ColView(j)) / 400
	}
	ratio := func(a mat.Symmetric, u mat.Matrix) float64 {
		var es mat.EigenSym
		require.True(t, es.Factorize(a, false))
		v := es.Values(nil)
		return CapturedRatio(a, u, v[len(v)-1:])
	}
	centred := Centre(s, mean)
	e2 := mat.NewDense(3, 1, []float64{0, 1, 0})
	assert.InDelta(t, 1, ratio(centred, e2), 1e-12, "e2 is the centred top direction")
	assert.Less(t, ratio(s, e2), 0.02, "uncentred, e1 (the mean) dominates")
	e1 := mat.NewDense(3, 1, []float64{1, 0, 0})
	assert.InDelta(t, 0, ratio(centred, e1), 1e-12, "the mean direction carries no variance")
	assert.InDelta(t, 1, ratio(s, e1), 1e-12)
}
