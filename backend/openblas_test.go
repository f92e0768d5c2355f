//go:build openblas

package backend

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend/internal/lapacke"
)

func TestOpenBLASIsDefault(t *testing.T) {
	assert.Equal(t, "openblas", Default().Name())
	be := OpenBLAS{}
	n := be.Threads()
	require.GreaterOrEqual(t, n, 1)
	be.SetThreads(1)
	assert.Equal(t, 1, be.Threads())
	assert.Equal(t, n, SetThreads(n))
}

// TestOpenBLASOrientation pins the row-/column-major hand-over on small
// non-symmetric matrices whose factors are known in closed form.
func TestOpenBLASOrientation(t *testing.T) {
	be := OpenBLAS{}
	// A = diag(3, 2) embedded in a 2×3 matrix with a permutation: the
	// singular vectors are coordinate axes, so any transposition mistake
	// shows up as swapped rows/columns.
	a := mat.NewDense(2, 3, []float64{
		0, 3, 0,
		0, 0, 2,
	})
	u, s, v, err := be.SVD(a)
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{3, 2}, s, 1e-15)
	assert.InDelta(t, 1, math.Abs(u.At(0, 0)), 1e-15)
	assert.InDelta(t, 1, math.Abs(u.At(1, 1)), 1e-15)
	assert.InDelta(t, 1, math.Abs(v.At(1, 0)), 1e-15)
	assert.InDelta(t, 1, math.Abs(v.At(2, 1)), 1e-15)
	assert.Less(t, svdResidual(a, u, s, v), 1e-15)

	// QR of an upper-triangular matrix with positive diagonal: Q = ±I
	// columns, R = ±A.
	r0 := mat.NewDense(3, 2, []float64{
		2, 5,
		0, 3,
		0, 0,
	})
	q, r, err := be.QR(r0)
	require.NoError(t, err)
	assert.InDelta(t, 2, math.Abs(r.At(0, 0)), 1e-15)
	assert.InDelta(t, 5, math.Abs(r.At(0, 1)), 1e-15)
	assert.InDelta(t, 3, math.Abs(r.At(1, 1)), 1e-15)
	assert.Zero(t, r.At(1, 0))
	assert.InDelta(t, 1, math.Abs(q.At(0, 0)), 1e-15)

	// Eigenvectors of a diagonal matrix in scrambled order.
	d := mat.NewSymDense(3, []float64{
		1, 0, 0,
		0, 7, 0,
		0, 0, 4,
	})
	vals, vecs, err := be.EigSym(d)
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{7, 4, 1}, vals, 1e-15)
	assert.InDelta(t, 1, math.Abs(vecs.At(1, 0)), 1e-15)
	assert.InDelta(t, 1, math.Abs(vecs.At(2, 1)), 1e-15)
	assert.InDelta(t, 1, math.Abs(vecs.At(0, 2)), 1e-15)
	top, topVecs, err := be.EigSymRange(d, 2)
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{7, 4}, top, 1e-15)
	assert.InDelta(t, 1, math.Abs(topVecs.At(1, 0)), 1e-15)
	assert.InDelta(t, 1, math.Abs(topVecs.At(2, 1)), 1e-15)

	// SPD solve with two right-hand sides.
	lower := mat.NewDense(3, 3, []float64{
		4, 0, 0,
		1, 5, 0,
		2, 3, 6,
	})
	sym := mat.NewSymDense(3, nil)
	for i := 0; i < 3; i++ {
		for j := 0; j <= i; j++ {
			sym.SetSym(i, j, lower.At(i, j))
		}
	}
	x, err := be.SPDSolve(sym, mat.NewDense(3, 2, []float64{1, 0, 0, 1, 0, 0}))
	require.NoError(t, err)
	var ax mat.Dense
	ax.Mul(sym, x)
	assert.True(t, mat.EqualApprox(&ax, mat.NewDense(3, 2, []float64{1, 0, 0, 1, 0, 0}), 1e-14))
}

// TestOpenBLASAgreesWithGonum compares every kernel on larger random inputs.
func TestOpenBLASAgreesWithGonum(t *testing.T) {
	rng := newRNG(43)
	ob, gn := OpenBLAS{}, Gonum{}
	a := randDense(rng, 150, 90)
	sym := randSym(rng, 120, 1)

	assert.True(t, mat.EqualApprox(ob.Gram(2, a), gn.Gram(2, a), 1e-11))

	ov, ovecs, err := ob.EigSym(sym)
	require.NoError(t, err)
	gv, gvecs, err := gn.EigSym(sym)
	require.NoError(t, err)
	assert.InDeltaSlice(t, gv, ov, 1e-12)
	for j := 0; j < 120; j++ {
		// Random symmetric matrices have simple eigenvalues: vectors agree
		// up to sign.
		dot := math.Abs(mat.Dot(ovecs.ColView(j), gvecs.ColView(j)))
		assert.InDelta(t, 1, dot, 1e-8, "eigenvector %d", j)
	}
	rv, rvecs, err := ob.EigSymRange(sym, 15)
	require.NoError(t, err)
	assert.InDeltaSlice(t, gv[:15], rv, 1e-12)
	assert.Less(t, subspaceDist(gvecs.Slice(0, 120, 0, 15), rvecs), 1e-10)

	ou, os, ovv, err := ob.SVD(a)
	require.NoError(t, err)
	_, gs, gvv, err := gn.SVD(a)
	require.NoError(t, err)
	assert.InDeltaSlice(t, gs, os, 1e-12)
	assert.Less(t, subspaceDist(gvv.Slice(0, 90, 0, 10), ovv.Slice(0, 90, 0, 10)), 1e-10)
	assert.Less(t, svdResidual(a, ou, os, ovv), 1e-14)
}

// TestRawLAPACKEBinding checks the binding itself on column-major data.
func TestRawLAPACKEBinding(t *testing.T) {
	// Column-major 2×2 [[2, 1], [1, 2]]: eigenvalues 1, 3.
	a := []float64{2, 1, 1, 2}
	w := make([]float64, 2)
	info, err := lapacke.Dsyevd(true, 'L', 2, a, 2, w)
	require.NoError(t, err)
	require.Zero(t, info)
	assert.InDeltaSlice(t, []float64{1, 3}, w, 1e-15)
	// Illegal arguments are errors, not crashes.
	_, err = lapacke.Dsyevd(true, 'X', 2, []float64{1, 0, 0, 1}, 2, w)
	assert.Error(t, err)
	// Not positive definite: positive info.
	info, err = lapacke.Dposv('U', 2, 1, []float64{1, 2, 2, 1}, 2, []float64{1, 1}, 2)
	require.NoError(t, err)
	assert.Equal(t, 2, info)
}
