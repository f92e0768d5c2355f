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
