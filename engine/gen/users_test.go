package gen

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
)

func TestUsersLowRank(t *testing.T) {
	m, err := Lookup(UsersLowRankName)
	require.NoError(t, err)
	g, err := Run(m, map[string]string{"users": "300", "samples": "40", "dim": "12", "rank": "3", "noise": "0.2"}, 7)
	require.NoError(t, err)
	ds := g.Data
	assert.Equal(t, data.Users, ds.Kind)
	assert.Equal(t, 300, ds.NumUsers())
	assert.Equal(t, 12000, ds.N())
	u, v := g.Truth["U"], g.Truth["V"]
	var utu mat.Dense
	utu.Mul(u.T(), u)
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			want := 0.0
			if i == j {
				want = 1
			}
			assert.InDelta(t, want, utu.At(i, j), 1e-12)
		}
	}
	for i := 0; i < 300; i++ {
		assert.InDelta(t, 1, mat.Norm(v.RowView(i), 2), 1e-12, "unit heads")
	}
	// Residuals y − ⟨x, U* v_i*⟩ have standard deviation R.
	var ss float64
	for i := 0; i < 300; i++ {
		var w mat.VecDense
		w.MulVec(u, v.RowView(i))
		for r := ds.UserStart[i]; r < ds.UserStart[i+1]; r++ {
			e := ds.Y[r] - mat.Dot(ds.X.RowView(r), &w)
			ss += e * e
		}
	}
	assert.InDelta(t, 0.2, math.Sqrt(ss/12000), 0.01)
	assert.LessOrEqual(t, g.Scalars["sigma_min"], g.Scalars["sigma_max"])
	assert.InDelta(t, 1, g.Scalars["gamma"], 1e-12)

	gc, err := Run(m, map[string]string{"users": "10", "labels": "classification", "heads": "gaussian"}, 1)
	require.NoError(t, err)
	for _, y := range gc.Data.Y {
		assert.True(t, y == 1 || y == -1)
	}
	_, err = Run(m, map[string]string{"dim": "2", "rank": "3"}, 1)
	assert.ErrorContains(t, err, "rank 3 exceeds")
}
