package gen

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

func TestOrbitSpiked(t *testing.T) {
	m, err := Lookup(OrbitSpikedName)
	require.NoError(t, err)
	for _, shape := range []string{"spiked", "projection", "isotropic"} {
		t.Run(shape, func(t *testing.T) {
			g, err := Run(m, map[string]string{"n": "300", "d": "7", "rank": "2", "shape": shape}, 5)
			require.NoError(t, err)
			x := g.Data.X
			n, d := x.Dims()
			require.Equal(t, 300, n)
			require.Equal(t, 7, d)
			for i := 0; i < n; i++ {
				assert.InDelta(t, 1, mat.Norm(x.RowView(i), 2), 1e-12)
			}
			u := g.Truth["U"]
			var utu mat.Dense
			utu.Mul(u.T(), u)
			assert.True(t, mat.EqualApprox(&utu, orbitEye(2), 1e-12))
			var a mat.Dense
			a.Mul(x.T(), x)
			assert.True(t, mat.EqualApprox(&a, g.Truth["A"], 1e-9))
			assert.InDelta(t, 300, mat.Trace(&a), 1e-9)
			if shape == "projection" {
				// Rows lie in span(U): the residual is zero.
				var proj, res mat.Dense
				proj.Mul(x, u)
				res.Mul(&proj, u.T())
				res.Sub(x, &res)
				assert.Less(t, mat.Norm(&res, 2), 1e-10)
			}
		})
	}
	// Same seed, same data; spike direction dominates A's top eigenvector.
	g1, err := Run(m, map[string]string{"n": "2000", "d": "10", "rank": "1", "spike": "20"}, 9)
	require.NoError(t, err)
	g2, err := Run(m, map[string]string{"n": "2000", "d": "10", "rank": "1", "spike": "20"}, 9)
	require.NoError(t, err)
	assert.True(t, mat.Equal(g1.Data.X, g2.Data.X))
	var es mat.EigenSym
	require.True(t, es.Factorize(mat.NewSymDense(10, g1.Truth["A"].RawMatrix().Data), true))
	var v mat.Dense
	es.VectorsTo(&v)
	top := v.ColView(9)
	assert.Greater(t, math.Abs(mat.Dot(top, g1.Truth["U"].ColView(0))), 0.95)

	_, err = Run(m, map[string]string{"d": "3", "rank": "4"}, 1)
	assert.Error(t, err)
}

func orbitEye(n int) *mat.Dense {
	m := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		m.Set(i, i, 1)
	}
	return m
}
