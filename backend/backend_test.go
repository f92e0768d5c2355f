package backend

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// symCase is a symmetric test matrix with, when known, its spectrum
// (descending) and whether consecutive eigenvalues are well separated.
type symCase struct {
	name      string
	a         *mat.SymDense
	spectrum  []float64 // nil when unknown
	separated bool      // all eigenvalues simple with a clear gap
}

func symCases() []symCase {
	rng := newRNG(11)
	n := 60
	desc := func(v []float64) []float64 {
		out := append([]float64(nil), v...)
		for i := 1; i < len(out); i++ {
			for j := i; j > 0 && out[j] > out[j-1]; j-- {
				out[j], out[j-1] = out[j-1], out[j]
			}
		}
		return out
	}
	ill := logspace(0, -12, n)
	for i := 1; i < n; i += 2 {
		ill[i] = -ill[i]
	}
	rankDef := make([]float64, n)
	copy(rankDef, []float64{9, 7, 5, 3, 1})
	repeated := make([]float64, n)
	for i := range repeated {
		repeated[i] = float64(3 - i/20) // three eigenvalues of multiplicity 20
	}
	return []symCase{
		{"random", randSym(rng, n, 1), nil, false},
		{"ill-conditioned", symWithSpectrum(rng, ill), desc(ill), false},
		{"rank-deficient", symWithSpectrum(rng, rankDef), desc(rankDef), false},
		{"repeated", symWithSpectrum(rng, repeated), desc(repeated), false},
		{"distinct", symWithSpectrum(rng, linspace(10, -5, n)), linspace(10, -5, n), true},
		{"flat-spectrum spiked", spikedNoisy(rng, n, []float64{8, 6, 4}, 1), nil, false},
	}
}

func TestEigSym(t *testing.T) {
	for _, be := range backendsUnderTest() {
		for _, tc := range symCases() {
			t.Run(be.Name()+"/"+tc.name, func(t *testing.T) {
				vals, vecs, err := be.EigSym(tc.a)
				require.NoError(t, err)
				n := tc.a.SymmetricDim()
				require.Len(t, vals, n)
				r, c := vecs.Dims()
				require.Equal(t, [2]int{n, n}, [2]int{r, c})
				requireDescending(t, vals)
				assert.Less(t, orthoErr(vecs), 1e-13)
				assert.Less(t, eigResidual(tc.a, vals, vecs), 1e-13)
				if tc.spectrum != nil {
					for i := range vals {
						assert.InDelta(t, tc.spectrum[i], vals[i], 1e-12*math.Abs(tc.spectrum[0]), "eigenvalue %d", i)
					}
				}
				// Agreement with the reference gonum backend.
				ref, refVecs, err := Gonum{}.EigSym(tc.a)
				require.NoError(t, err)
				for i := range vals {
					assert.InDelta(t, ref[i], vals[i], 1e-12*math.Max(1, math.Abs(ref[0])))
				}
				if tc.separated {
					assert.Less(t, subspaceDist(refVecs, vecs), 1e-11)
				}
			})
		}
	}
}

func TestSymInputsAreNotModified(t *testing.T) {
	rng := newRNG(3)
	for _, be := range backendsUnderTest() {
		a := randSym(rng, 40, 1)
		keep := mat.NewSymDense(40, nil)
		keep.CopySym(a)
		_, _, err := be.EigSym(a)
		require.NoError(t, err)
		_, _, err = be.EigSymTop(a, 3)
		require.NoError(t, err)
		spd := mat.NewSymDense(40, nil)
		spd.SymOuterK(1, randDense(rng, 40, 60))
		spdKeep := mat.NewSymDense(40, nil)
		spdKeep.CopySym(spd)
		rhs := randDense(rng, 40, 2)
		rhsKeep := mat.DenseCopyOf(rhs)
		_, err = be.SPDSolve(spd, rhs)
		require.NoError(t, err)
		assert.True(t, mat.Equal(a, keep), be.Name())
		assert.True(t, mat.Equal(spd, spdKeep), be.Name())
		assert.True(t, mat.Equal(rhs, rhsKeep), be.Name())
	}
}

func TestEigSymTop(t *testing.T) {
	// Dimensions on both sides of UseTruncatedEig so both the Krylov path and
	// the exact path run.
	rng := newRNG(5)
	type tcase struct {
		name  string
		a     *mat.SymDense
		k     int
		exact bool // subspace comparable (gap after k)
	}
	n := 400
	cases := []tcase{
		{"small random", randSym(rng, 50, 1), 7, true},
		{"spiked k=10", spikedNoisy(rng, n, linspace(6, 2, 10), 1), 10, true},
		{"spiked k=3", spikedNoisy(rng, n, linspace(6, 2, 10), 1), 3, true},
		{"distinct", symWithSpectrum(rng, linspace(20, -30, 200)), 5, true},
		{"negative dominant", symWithSpectrum(rng, append(linspace(1, 0.5, 150), -100, -90)), 4, true},
		{"repeated at the boundary", symWithSpectrum(rng, append([]float64{5, 5, 5, 5}, linspace(1, 0, 196)...)), 2, false},
		{"rank-deficient", symWithSpectrum(rng, append([]float64{3, 2, 1}, make([]float64, 197)...)), 6, false},
	}
	for _, be := range backendsUnderTest() {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/%s", be.Name(), tc.name), func(t *testing.T) {
				p := tc.a.SymmetricDim()
				vals, vecs, err := be.EigSymTop(tc.a, tc.k)
				require.NoError(t, err)
				require.Len(t, vals, tc.k)
				r, c := vecs.Dims()
				require.Equal(t, [2]int{p, tc.k}, [2]int{r, c})
				requireDescending(t, vals)
				assert.Less(t, orthoErr(vecs), 1e-12)
				assert.Less(t, eigResidual(tc.a, vals, vecs), 1e-9)
				full, fullVecs, err := be.EigSym(tc.a)
				require.NoError(t, err)
				for i := range vals {
					assert.InDelta(t, full[i], vals[i], 1e-9*math.Max(1, math.Abs(full[0])), "eigenvalue %d", i)
				}
				if tc.exact {
					assert.Less(t, subspaceDist(fullVecs.Slice(0, p, 0, tc.k), vecs), 1e-8)
				}
			})
		}
	}
}

func TestEigSymTopKrylov(t *testing.T) {
	rng := newRNG(9)
	n, k := 500, 8
	a := spikedNoisy(rng, n, linspace(4, 1.6, k), 1)
	ref, refVecs, err := Gonum{}.EigSym(a)
	require.NoError(t, err)
	for _, be := range backendsUnderTest() {
		for _, tol := range []float64{1e-4, 1e-8, 1e-12} {
			t.Run(fmt.Sprintf("%s/tol=%g", be.Name(), tol), func(t *testing.T) {
				vals, vecs, info, err := EigSymTopKrylov(be, a, k, TruncOptions{Tol: tol})
				require.NoError(t, err)
				dist := subspaceDist(refVecs.Slice(0, n, 0, k), vecs)
				// The a posteriori bound holds and meets the tolerance.
				assert.LessOrEqual(t, info.SubspaceBound, tol)
				assert.LessOrEqual(t, dist, info.SubspaceBound*1.01+1e-14)
				assert.False(t, info.Degenerate)
				assert.Less(t, orthoErr(vecs), 1e-12)
				for i := range vals {
					// Eigenvalue errors are quadratic in the residual.
					assert.InDelta(t, ref[i], vals[i], math.Max(1e-12, info.Residual*info.Residual/info.Gap*4))
				}
			})
		}
	}
}

func TestKrylovFlatSpectrum(t *testing.T) {
	// A DP-noised spike barely above a flat bulk: the gap after k is small,
	// so subspace iteration is slow. The solver must either meet its
	// tolerance or say it did not converge, never return a poor basis.
	rng := newRNG(21)
	n, k := 400, 4
	a := spikedNoisy(rng, n, []float64{2.4, 2.2, 2.0, 1.3}, 1)
	_, refVecs, err := Gonum{}.EigSym(a)
	require.NoError(t, err)
	for _, be := range backendsUnderTest() {
		t.Run(be.Name(), func(t *testing.T) {
			_, vecs, info, err := EigSymTopKrylov(be, a, k, TruncOptions{MaxIter: 4})
			require.ErrorIs(t, err, ErrNotConverged)
			assert.Nil(t, vecs)
			assert.Greater(t, info.SubspaceBound, DefaultTruncTol)

			_, vecs, info, err = EigSymTopKrylov(be, a, k, TruncOptions{MaxIter: 400})
			require.NoError(t, err)
			assert.LessOrEqual(t, subspaceDist(refVecs.Slice(0, n, 0, k), vecs), info.SubspaceBound*1.01+1e-14)
			assert.LessOrEqual(t, info.SubspaceBound, DefaultTruncTol)
			t.Logf("flat spectrum: %d block products, %d restarts, bound %.2g", info.Iterations, info.Restarts, info.SubspaceBound)

			// The backend method falls back to the exact solver instead.
			_, vecs, err = be.EigSymTop(a, k)
			require.NoError(t, err)
			assert.Less(t, subspaceDist(refVecs.Slice(0, n, 0, k), vecs), 1e-8)
		})
	}
}

func TestKrylovDegenerate(t *testing.T) {
	rng := newRNG(4)
	for _, be := range backendsUnderTest() {
		t.Run(be.Name(), func(t *testing.T) {
			// Identity: every subspace is invariant.
			id := mat.NewSymDense(300, nil)
			for i := 0; i < 300; i++ {
				id.SetSym(i, i, 1)
			}
			vals, vecs, info, err := EigSymTopKrylov(be, id, 3, TruncOptions{})
			require.NoError(t, err)
			assert.True(t, info.Degenerate)
			assert.InDeltaSlice(t, []float64{1, 1, 1}, vals, 1e-14)
			assert.Less(t, orthoErr(vecs), 1e-13)

			// Zero matrix: likewise.
			zero := mat.NewSymDense(200, nil)
			vals, _, _, err = EigSymTopKrylov(be, zero, 2, TruncOptions{})
			require.NoError(t, err)
			assert.Equal(t, []float64{0, 0}, vals)

			// Rank one with k beyond the rank: the trailing eigenvalue 0 is
			// repeated, so the basis is exact but not unique.
			u := randDense(rng, 300, 1)
			r1 := mat.NewSymDense(300, nil)
			r1.SymOuterK(1, u)
			vals, vecs, _, err = EigSymTopKrylov(be, r1, 3, TruncOptions{})
			require.NoError(t, err)
			assert.InDelta(t, mat.Dot(u.ColView(0), u.ColView(0)), vals[0], 1e-10)
			assert.Less(t, eigResidual(r1, vals, vecs), 1e-12)
		})
	}
}

func TestTruncOptionsValidation(t *testing.T) {
	a := randSym(newRNG(1), 20, 1)
	for _, o := range []TruncOptions{{Tol: -1}, {Tol: 1}, {Tol: math.NaN()}, {MaxIter: -2}, {Oversample: -1}} {
		_, _, _, err := EigSymTopKrylov(Gonum{}, a, 2, o)
		assert.Error(t, err, "%+v", o)
		_, _, _, _, err = SVDTopKrylov(Gonum{}, randDense(newRNG(1), 20, 10), 2, o)
		assert.Error(t, err, "%+v", o)
	}
}

type genCase struct {
	name     string
	a        mat.Matrix
	spectrum []float64
	distinct bool
}

func genCases() []genCase {
	rng := newRNG(13)
	ill := logspace(0, -12, 40)
	return []genCase{
		{"tall random", randDense(rng, 80, 30), nil, true},
		{"wide random", randDense(rng, 25, 70), nil, true},
		{"square", randDense(rng, 50, 50), nil, true},
		{"ill-conditioned", withSpectrum(rng, 60, 40, ill), ill, false},
		{"rank-deficient", withSpectrum(rng, 50, 40, []float64{5, 4, 3}), append([]float64{5, 4, 3}, make([]float64, 37)...), false},
		{"repeated", withSpectrum(rng, 45, 30, append(linspace(2, 2, 10), linspace(1, 1, 20)...)), append(linspace(2, 2, 10), linspace(1, 1, 20)...), false},
		{"transposed view", randDense(rng, 30, 70).T(), nil, true},
		{"strided slice", randDense(rng, 60, 60).Slice(5, 55, 10, 40), nil, true},
	}
}

func TestSVD(t *testing.T) {
	for _, be := range backendsUnderTest() {
		for _, tc := range genCases() {
			t.Run(be.Name()+"/"+tc.name, func(t *testing.T) {
				m, n := tc.a.Dims()
				r := min(m, n)
				u, s, v, err := be.SVD(tc.a)
				require.NoError(t, err)
				require.Len(t, s, r)
				ur, uc := u.Dims()
				vr, vc := v.Dims()
				require.Equal(t, [4]int{m, r, n, r}, [4]int{ur, uc, vr, vc})
				requireDescending(t, s)
				assert.GreaterOrEqual(t, s[r-1], 0.0)
				assert.Less(t, orthoErr(u), 1e-13)
				assert.Less(t, orthoErr(v), 1e-13)
				assert.Less(t, svdResidual(tc.a, u, s, v), 1e-13)
				if tc.spectrum != nil {
					for i := range s {
						assert.InDelta(t, tc.spectrum[i], s[i], 1e-13*tc.spectrum[0])
					}
				}
				_, ref, refV, err := Gonum{}.SVD(tc.a)
				require.NoError(t, err)
				assert.InDeltaSlice(t, ref, s, 1e-12*ref[0])
				if tc.distinct {
					assert.Less(t, subspaceDist(refV, v), 1e-10)
				}
			})
		}
	}
}

func TestSVDTop(t *testing.T) {
	rng := newRNG(17)
	spikedData := func(m, n int, s []float64, noise float64) *mat.Dense {
		a := withSpectrum(rng, m, n, s)
		e := randDense(rng, m, n)
		e.Scale(noise, e)
		a.Add(a, e)
		return a
	}
	cases := []struct {
		name  string
		a     mat.Matrix
		k     int
		exact bool
	}{
		{"small", randDense(rng, 40, 30), 5, true},
		{"tall low-rank plus noise", spikedData(700, 300, linspace(30, 10, 8), 0.2), 8, true},
		{"wide low-rank plus noise", spikedData(250, 600, linspace(30, 10, 6), 0.2), 4, true},
		{"transposed", spikedData(600, 260, linspace(30, 10, 6), 0.2).T(), 6, true},
		{"rank-deficient", withSpectrum(rng, 400, 300, []float64{4, 3}), 4, false},
		{"ill-conditioned head", withSpectrum(rng, 400, 300, logspace(0, -6, 12)), 5, true},
	}
	for _, be := range backendsUnderTest() {
		for _, tc := range cases {
			t.Run(be.Name()+"/"+tc.name, func(t *testing.T) {
				m, n := tc.a.Dims()
				u, s, v, err := be.SVDTop(tc.a, tc.k)
				require.NoError(t, err)
				require.Len(t, s, tc.k)
				ur, uc := u.Dims()
				vr, vc := v.Dims()
				require.Equal(t, [4]int{m, tc.k, n, tc.k}, [4]int{ur, uc, vr, vc})
				requireDescending(t, s)
				assert.Less(t, orthoErr(u), 1e-10)
				assert.Less(t, orthoErr(v), 1e-12)
				fu, fs, fv, err := be.SVD(tc.a)
				require.NoError(t, err)
				assert.InDeltaSlice(t, fs[:tc.k], s, 1e-9*fs[0])
				if tc.exact {
					assert.Less(t, subspaceDist(fv.Slice(0, n, 0, tc.k), v), 1e-8)
					assert.Less(t, subspaceDist(fu.Slice(0, m, 0, tc.k), u), 1e-8)
				}
			})
		}
	}
}

func TestSVDTopKrylovBound(t *testing.T) {
	rng := newRNG(23)
	a := withSpectrum(rng, 600, 400, linspace(10, 5, 10))
	e := randDense(rng, 600, 400)
	e.Scale(0.05, e)
	a.Add(a, e)
	_, _, fv, err := Gonum{}.SVD(a)
	require.NoError(t, err)
	for _, be := range backendsUnderTest() {
		u, s, v, info, err := SVDTopKrylov(be, a, 10, TruncOptions{Tol: 1e-9})
		require.NoError(t, err, be.Name())
		assert.LessOrEqual(t, info.SubspaceBound, 1e-9)
		assert.LessOrEqual(t, subspaceDist(fv.Slice(0, 400, 0, 10), v), info.SubspaceBound*1.01+1e-14)
		// A·V = U·S holds to rounding by construction.
		var av mat.Dense
		av.Mul(a, v)
		for j := range s {
			for i := 0; i < 600; i++ {
				av.Set(i, j, av.At(i, j)-s[j]*u.At(i, j))
			}
		}
		assert.Less(t, mat.Norm(&av, 2), 1e-11*s[0])
		_, _, _, _, err = SVDTopKrylov(be, a, 10, TruncOptions{MaxIter: 1})
		assert.ErrorIs(t, err, ErrNotConverged)
	}
}

func TestQR(t *testing.T) {
	rng := newRNG(29)
	cases := map[string]mat.Matrix{
		"tall":            randDense(rng, 70, 20),
		"square":          randDense(rng, 30, 30),
		"single column":   randDense(rng, 10, 1),
		"transposed wide": randDense(rng, 15, 40).T(),
		"strided":         randDense(rng, 50, 50).Slice(3, 43, 7, 27),
		"rank-deficient":  withSpectrum(rng, 40, 12, []float64{3, 2}),
	}
	for _, be := range backendsUnderTest() {
		for name, a := range cases {
			t.Run(be.Name()+"/"+name, func(t *testing.T) {
				m, n := a.Dims()
				q, r, err := be.QR(a)
				require.NoError(t, err)
				qr, qc := q.Dims()
				rr, rc := r.Dims()
				require.Equal(t, [4]int{m, n, n, n}, [4]int{qr, qc, rr, rc})
				assert.Less(t, orthoErr(q), 1e-13)
				for i := 0; i < n; i++ {
					for j := 0; j < i; j++ {
						assert.Zero(t, r.At(i, j))
					}
				}
				var qrp mat.Dense
				qrp.Mul(q, r)
				qrp.Sub(&qrp, a)
				assert.Less(t, mat.Norm(&qrp, 2), 1e-13*math.Max(1, mat.Norm(a, 2)))
			})
		}
	}
}

func TestSPDSolve(t *testing.T) {
	rng := newRNG(31)
	for _, be := range backendsUnderTest() {
		for _, nrhs := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/nrhs=%d", be.Name(), nrhs), func(t *testing.T) {
				a := mat.NewSymDense(40, nil)
				a.SymOuterK(1, randDense(rng, 40, 80))
				x0 := randDense(rng, 40, nrhs)
				var b mat.Dense
				b.Mul(a, x0)
				x, err := be.SPDSolve(a, &b)
				require.NoError(t, err)
				assert.True(t, mat.EqualApprox(x, x0, 1e-10))
				// Transposed right-hand side view.
				x, err = be.SPDSolve(a, mat.DenseCopyOf(b.T()).T())
				require.NoError(t, err)
				assert.True(t, mat.EqualApprox(x, x0, 1e-10))
			})
		}
		indef := symWithSpectrum(rng, []float64{3, 2, -1, 1})
		_, err := be.SPDSolve(indef, randDense(rng, 4, 1))
		assert.ErrorIs(t, err, ErrNotPositiveDefinite, be.Name())
	}
}

func TestGramAndMul(t *testing.T) {
	rng := newRNG(37)
	big := randDense(rng, 50, 40)
	inputs := map[string]mat.Matrix{
		"dense":      randDense(rng, 30, 12),
		"transposed": randDense(rng, 12, 30).T(),
		"strided":    big.Slice(4, 34, 3, 15),
		"generic":    mat.NewDiagDense(5, []float64{1, 2, 3, 4, 5}),
	}
	for _, be := range backendsUnderTest() {
		for name, a := range inputs {
			t.Run(be.Name()+"/"+name, func(t *testing.T) {
				g := be.Gram(0.5, a)
				var want mat.Dense
				want.Mul(a.T(), a)
				want.Scale(0.5, &want)
				assert.True(t, mat.EqualApprox(g, &want, 1e-12))
			})
		}
		a, b := randDense(rng, 7, 5), randDense(rng, 9, 5)
		var got, want mat.Dense
		require.NoError(t, be.Mul(&got, a, false, b, true))
		want.Mul(a, b.T())
		assert.True(t, mat.EqualApprox(&got, &want, 1e-13))
		got2 := mat.NewDense(5, 5, nil)
		require.NoError(t, be.Mul(got2, a, true, a, false))
		assert.ErrorIs(t, be.Mul(&mat.Dense{}, a, false, b, false), ErrShape)
		assert.ErrorIs(t, be.Mul(mat.NewDense(3, 3, nil), a, false, b, true), ErrShape)
		// The destination may alias an operand.
		sq := randDense(rng, 4, 4)
		var sq2 mat.Dense
		sq2.Mul(sq, sq)
		require.NoError(t, be.Mul(sq, sq, false, sq, false))
		assert.True(t, mat.EqualApprox(sq, &sq2, 1e-13))
		// Products large enough for whole register tiles and several
		// goroutines, every transpose, into a strided destination view.
		x, y := randDense(rng, 130, 270), randDense(rng, 270, 130)
		for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			xa, yb := mat.Matrix(x), mat.Matrix(y)
			if tr[0] {
				xa = mat.DenseCopyOf(x.T())
			}
			if tr[1] {
				yb = mat.DenseCopyOf(y.T())
			}
			host := randDense(rng, 140, 140)
			before := mat.DenseCopyOf(host)
			dst := host.Slice(3, 133, 5, 135).(*mat.Dense)
			require.NoError(t, be.Mul(dst, xa, tr[0], yb, tr[1]))
			var want mat.Dense
			want.Mul(x, y)
			assert.True(t, mat.EqualApprox(dst, &want, 1e-12), "%s transposes %v", be.Name(), tr)
			before.Slice(3, 133, 5, 135).(*mat.Dense).Copy(dst)
			assert.True(t, mat.Equal(host, before), "outside the destination view")
		}
	}
}

func TestBadInputs(t *testing.T) {
	nan := randSym(newRNG(1), 10, 1)
	nan.SetSym(2, 3, math.NaN())
	inf := randDense(newRNG(2), 10, 6)
	inf.Set(4, 1, math.Inf(-1))
	for _, be := range backendsUnderTest() {
		t.Run(be.Name(), func(t *testing.T) {
			_, _, err := be.EigSym(nan)
			assert.ErrorIs(t, err, ErrNonFinite)
			_, _, err = be.EigSymTop(nan, 2)
			assert.ErrorIs(t, err, ErrNonFinite)
			_, _, _, err = be.SVD(inf)
			assert.ErrorIs(t, err, ErrNonFinite)
			_, _, _, err = be.SVDTop(inf, 2)
			assert.ErrorIs(t, err, ErrNonFinite)
			_, _, err = be.QR(inf)
			assert.ErrorIs(t, err, ErrNonFinite)
			_, err = be.SPDSolve(nan, randDense(newRNG(3), 10, 1))
			assert.ErrorIs(t, err, ErrNonFinite)

			sym := randSym(newRNG(4), 10, 1)
			for _, k := range []int{0, -1, 11} {
				_, _, err = be.EigSymTop(sym, k)
				assert.ErrorIs(t, err, ErrShape, "k=%d", k)
				_, _, _, err = be.SVDTop(randDense(newRNG(5), 10, 6), k)
				assert.ErrorIs(t, err, ErrShape, "k=%d", k)
			}
			_, _, err = be.QR(randDense(newRNG(6), 3, 5))
			assert.ErrorIs(t, err, ErrShape)
			_, err = be.SPDSolve(sym, randDense(newRNG(7), 9, 1))
			assert.ErrorIs(t, err, ErrShape)
			_, _, _, err = be.SVD(&mat.Dense{})
			assert.True(t, errors.Is(err, ErrShape) || err != nil)
		})
	}
}

func TestDefault(t *testing.T) {
	be := Default()
	assert.Contains(t, []string{"gonum", "openblas"}, be.Name())
	assert.GreaterOrEqual(t, be.Threads(), 1)
	assert.Equal(t, be.Threads(), SetThreads(be.Threads()))
}

func TestTopFallsBackToExact(t *testing.T) {
	// λ3 − λ4 = 1e-9: no method determines the top-3 subspace to 1e-10, so
	// the Krylov solver must refuse and the backend method must fall back
	// to the exact solver.
	rng := newRNG(41)
	spec := append([]float64{5, 4, 3 + 1e-9, 3}, linspace(1, 0, 296)...)
	a := symWithSpectrum(rng, spec)
	for _, be := range backendsUnderTest() {
		t.Run(be.Name(), func(t *testing.T) {
			_, _, _, err := EigSymTopKrylov(be, a, 3, TruncOptions{MaxIter: 30})
			require.ErrorIs(t, err, ErrNotConverged)
			vals, vecs, err := be.EigSymTop(a, 3)
			require.NoError(t, err)
			assert.InDeltaSlice(t, spec[:3], vals, 1e-12)
			assert.Less(t, eigResidual(a, vals, vecs), 1e-13)
		})
	}
}

func TestSVDTopKrylovOrientations(t *testing.T) {
	// Wide inputs and transposed views run the Krylov iteration on the
	// smaller Gram matrix and swap the factors back.
	rng := newRNG(47)
	base := withSpectrum(rng, 150, 360, linspace(8, 4, 6))
	noise := randDense(rng, 150, 360)
	noise.Scale(0.01, noise)
	base.Add(base, noise)
	inputs := map[string]mat.Matrix{
		"wide":       base,
		"transposed": mat.DenseCopyOf(base.T()).T(),
		"tall view":  base.T(),
	}
	for _, be := range backendsUnderTest() {
		for name, a := range inputs {
			t.Run(be.Name()+"/"+name, func(t *testing.T) {
				m, n := a.Dims()
				fu, fs, fv, err := be.SVD(a)
				require.NoError(t, err)
				u, s, v, info, err := SVDTopKrylov(be, a, 6, TruncOptions{})
				require.NoError(t, err)
				ur, _ := u.Dims()
				vr, _ := v.Dims()
				require.Equal(t, [2]int{m, n}, [2]int{ur, vr})
				assert.InDeltaSlice(t, fs[:6], s, 1e-10*fs[0])
				assert.LessOrEqual(t, subspaceDist(fv.Slice(0, n, 0, 6), v), info.SubspaceBound*1.01+1e-14)
				assert.LessOrEqual(t, subspaceDist(fu.Slice(0, m, 0, 6), u), info.SubspaceBound*1.01+1e-14)
			})
		}
	}
}

// lowerSym is a symmetric matrix stored in its lower triangle only (the
// upper one holds garbage), as a RawSymmetricer may be.
type lowerSym struct{ r blas64.Symmetric }

func (l lowerSym) Dims() (int, int) { return l.r.N, l.r.N }
func (l lowerSym) At(i, j int) float64 {
	if i < j {
		i, j = j, i
	}
	return l.r.Data[i*l.r.Stride+j]
}
func (l lowerSym) T() mat.Matrix                  { return l }
func (l lowerSym) SymmetricDim() int              { return l.r.N }
func (l lowerSym) RawSymmetric() blas64.Symmetric { return l.r }

func TestLowerStoredSymmetric(t *testing.T) {
	rng := newRNG(53)
	n := 30
	ref := mat.NewSymDense(n, nil)
	ref.SymOuterK(1, randDense(rng, n, 2*n))
	data := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if j <= i {
				data[i*n+j] = ref.At(i, j)
			} else {
				data[i*n+j] = math.NaN() // never read
			}
		}
	}
	low := lowerSym{blas64.Symmetric{N: n, Stride: n, Data: data, Uplo: blas.Lower}}
	rhs := randDense(rng, n, 2)
	for _, be := range backendsUnderTest() {
		t.Run(be.Name(), func(t *testing.T) {
			want, _, err := be.EigSym(ref)
			require.NoError(t, err)
			got, vecs, err := be.EigSym(low)
			require.NoError(t, err)
			assert.InDeltaSlice(t, want, got, 1e-11*want[0])
			assert.Less(t, eigResidual(ref, got, vecs), 1e-13)
			top, _, err := be.EigSymTop(low, 3)
			require.NoError(t, err)
			assert.InDeltaSlice(t, want[:3], top, 1e-11*want[0])
			xw, err := be.SPDSolve(ref, rhs)
			require.NoError(t, err)
			xg, err := be.SPDSolve(low, rhs)
			require.NoError(t, err)
			assert.True(t, mat.EqualApprox(xw, xg, 1e-10))
			_, _, _, err = EigSymTopKrylov(be, low, 2, TruncOptions{})
			require.NoError(t, err)
		})
	}
}
