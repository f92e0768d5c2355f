package gen

import (
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
)

func TestTraceRegressionModel(t *testing.T) {
	m, err := Lookup(TraceModelName)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		rho  float64
	}{{"isotropic", 0}, {"ar1", 0.5}} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := Run(m, map[string]string{"n": "4000", "d1": "12", "d2": "9", "rank": "3", "sigma1": "3", "sigmar": "1",
				"sigma_xi": "0.4", "design_rho": ftoaTrace(tc.rho)}, 7)
			require.NoError(t, err)
			d := g.Data
			require.Equal(t, data.Trace, d.Kind)
			require.Equal(t, 4000, d.N())
			require.Equal(t, 108, d.P())
			// Truth: M = U Σ Vᵀ with orthonormal factors and σ = 3, 2, 1.
			u, v, s := g.Truth["U"], g.Truth["V"], g.Truth["Sigma"]
			var utu, vtv mat.Dense
			utu.Mul(u.T(), u)
			vtv.Mul(v.T(), v)
			assert.True(t, mat.EqualApprox(&utu, eye3(), 1e-12))
			assert.True(t, mat.EqualApprox(&vtv, eye3(), 1e-12))
			assert.InDeltaSlice(t, []float64{3, 2, 1}, []float64{s.At(0, 0), s.At(1, 1), s.At(2, 2)}, 1e-12)
			var us, usv mat.Dense
			us.Mul(u, s)
			usv.Mul(&us, v.T())
			assert.True(t, mat.EqualApprox(&usv, g.Truth["M"], 1e-12))
			// Responses: residual variance σ_ξ², design variance 1, lag-1
			// correlation ρ along the flattened coordinates.
			mv := g.Truth["M"].RawMatrix().Data
			var rss, xx, lag float64
			for i := 0; i < d.N(); i++ {
				row := d.X.RawRowView(i)
				var dot float64
				for j, x := range row {
					dot += x * mv[j]
					xx += x * x
					if j > 0 {
						lag += x * row[j-1]
					}
				}
				rss += (d.Y[i] - dot) * (d.Y[i] - dot)
			}
			nf, pf := float64(d.N()), float64(d.P())
			assert.InEpsilon(t, 0.16, rss/nf, 0.06)
			assert.InDelta(t, 1, xx/(nf*pf), 0.02)
			assert.InDelta(t, tc.rho, lag/(nf*(pf-1)), 0.02)
			assert.Equal(t, 1.0, g.Scalars["sigmar"])
			assert.InDelta(t, math.Sqrt(14), g.Scalars["norm_M_F"], 1e-12)
		})
	}
	_, err = Run(m, map[string]string{"d1": "3", "d2": "3", "rank": "4"}, 1)
	assert.Error(t, err)
	_, err = Run(m, map[string]string{"sigma1": "1", "sigmar": "2"}, 1)
	assert.Error(t, err)
}

func eye3() *mat.Dense { return mat.NewDense(3, 3, []float64{1, 0, 0, 0, 1, 0, 0, 0, 1}) }

func ftoaTrace(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
