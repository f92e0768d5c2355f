package gen

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
)

// Every model is a pure function of its parameters and seed.
func TestEveryModelIsSeeded(t *testing.T) {
	small := map[string]map[string]string{
		"spiked":         {"n": "200", "p": "8"},
		OrbitSpikedName:  {"n": "200", "d": "6"},
		TraceModelName:   {"n": "100", "d1": "5", "d2": "4"},
		UsersLowRankName: {"users": "20", "samples": "5", "dim": "6"},
	}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			raw, ok := small[name]
			require.True(t, ok, "add a small configuration for the new model %s", name)
			m, err := Lookup(name)
			require.NoError(t, err)
			a, err := Run(m, raw, 5)
			require.NoError(t, err)
			b, err := Run(m, raw, 5)
			require.NoError(t, err)
			c, err := Run(m, raw, 6)
			require.NoError(t, err)
			assert.True(t, mat.Equal(a.Data.X, b.Data.X), "same seed, same data")
			assert.Equal(t, a.Data.Y, b.Data.Y)
			for k, v := range a.Truth {
				assert.True(t, mat.Equal(v, b.Truth[k]), "same seed, same truth %s", k)
			}
			assert.False(t, mat.Equal(a.Data.X, c.Data.X), "another seed, other data")
			assert.NotEmpty(t, a.Truth, "ground truth is saved beside the data")
		})
	}
}

func TestSpikedModel(t *testing.T) {
	m, err := Lookup("spiked")
	require.NoError(t, err)
	cases := []struct {
		name  string
		raw   map[string]string
		want  string // error substring; "" for success
		spike []float64
	}{
		{"gaussian", map[string]string{"n": "40000", "p": "6", "rank": "2", "lambda": "9,4", "sigma2": "0.5"}, "", []float64{9, 4}},
		{"rademacher, one spike value for all", map[string]string{"n": "40000", "p": "6", "rank": "2", "lambda": "5", "noise": "rademacher"}, "", []float64{5, 5}},
		{"uniform", map[string]string{"n": "40000", "p": "5", "rank": "1", "lambda": "7", "noise": "uniform"}, "", []float64{7}},
		{"ascending spikes", map[string]string{"rank": "2", "lambda": "4,9"}, "descending order", nil},
		{"wrong spike count", map[string]string{"rank": "3", "lambda": "9,4"}, "want 1 or 3 values", nil},
		{"non-positive spike", map[string]string{"rank": "1", "lambda": "0"}, "not a positive finite number", nil},
		{"rank not below p", map[string]string{"p": "3", "rank": "3", "lambda": "1"}, "below the dimension 3", nil},
		{"unknown parameter", map[string]string{"k": "2"}, `unknown parameter "k"`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := Run(m, tc.raw, 1)
			if tc.want != "" {
				assert.ErrorContains(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, data.Rows, g.Data.Kind)
			n, p := g.Data.X.Dims()
			u, sigma := g.Truth["U"], g.Truth["Sigma"]
			_, r := u.Dims()
			require.Equal(t, len(tc.spike), r)
			var utu mat.Dense
			utu.Mul(u.T(), u)
			assert.True(t, mat.EqualApprox(&utu, eye(r), 1e-12), "U has orthonormal columns")
			for k, lam := range tc.spike {
				uk := u.ColView(k)
				assert.InDelta(t, lam+g.Scalars["sigma2"], mat.Inner(uk, sigma, uk), 1e-9, "Σ = UΛUᵀ + σ²I along u_%d", k)
			}
			// The sample covariance matches Σ up to sampling error
			// (entries have standard deviation ≲ (λ1+σ²)/√n).
			var s mat.SymDense
			s.SymOuterK(1/float64(n), g.Data.X.T())
			tol := 6 * (tc.spike[0] + g.Scalars["sigma2"]) / 200 // √n = 200
			for i := 0; i < p; i++ {
				for j := 0; j < p; j++ {
					assert.InDelta(t, sigma.At(i, j), s.At(i, j), tol, "Σ̂[%d,%d]", i, j)
				}
			}
		})
	}
}

func eye(r int) *mat.Dense {
	m := mat.NewDense(r, r, nil)
	for i := 0; i < r; i++ {
		m.Set(i, i, 1)
	}
	return m
}
