package backend

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// The five matrix families the issue names (random, ill-conditioned,
// rank-deficient, repeated values, flat spectrum), run through the kernels
// whose own tests (backend_test.go) do not already cover all five: thin and
// top-k SVD, the Krylov top-k eigensolver, thin QR and the SPD solve. Every
// backend under test is checked against known answers and against the gonum
// backend.
//
// Tolerances: the measured worst cases over both backends (seeds fixed) are
// noted beside each bound (pure-Go and OpenBLAS builds); the bounds sit
// 10–300× above them.

// familySpectrum returns the singular values (descending, length r) of a
// family, r = min(m, n).
func familySpectrum(name string, r int) []float64 {
	s := make([]float64, r)
	switch name {
	case "ill-conditioned": // condition number 1e12
		copy(s, logspace(0, -12, r))
	case "rank-deficient": // rank 3
		copy(s, []float64{5, 4, 3})
	case "repeated": // 10 × 2, the rest 1
		for i := range s {
			s[i] = 1
			if i < 10 {
				s[i] = 2
			}
		}
	case "flat spectrum": // three spikes over a bulk flat to 1e-3
		copy(s, []float64{8, 6, 4})
		copy(s[3:], linspace(1, 1-1e-3, r-3))
	default:
		panic("unknown family " + name)
	}
	return s
}

var familyNames = []string{"random", "ill-conditioned", "rank-deficient", "repeated", "flat spectrum"}

// familyDense returns an m×n member of the family and its singular values
// (nil for "random").
func familyDense(name string, seed uint64, m, n int) (*mat.Dense, []float64) {
	rng := newRNG(seed)
	if name == "random" {
		return randDense(rng, m, n), nil
	}
	s := familySpectrum(name, min(m, n))
	return withSpectrum(rng, m, n, s), s
}

// topSubspaceUnique reports whether the leading k singular (or eigen-)
// subspace of the family's spectrum is unique, i.e. s[k-1] > s[k].
func topSubspaceUnique(name string, k int) bool { return name != "repeated" || k >= 10 }

func TestSVDFamilies(t *testing.T) {
	const m, n = 70, 45
	for _, be := range backendsUnderTest() {
		for fi, name := range familyNames {
			t.Run(be.Name()+"/"+name, func(t *testing.T) {
				a, spec := familyDense(name, uint64(100+fi), m, n)
				u, s, v, err := be.SVD(a)
				require.NoError(t, err)
				require.Len(t, s, n)
				requireDescending(t, s)
				assert.Less(t, orthoErr(u), 1e-13)             // measured ≤ 4e-15
				assert.Less(t, orthoErr(v), 1e-13)             // measured ≤ 4e-15
				assert.Less(t, svdResidual(a, u, s, v), 1e-13) // measured ≤ 9e-15
				if spec != nil {
					assert.InDeltaSlice(t, spec, s, 1e-13*spec[0]) // measured ≤ 8e-16·s₁
				}
				_, ref, refV, err := Gonum{}.SVD(a)
				require.NoError(t, err)
				assert.InDeltaSlice(t, ref, s, 1e-13*ref[0])
				if name == "random" || name == "flat spectrum" {
					// Leading three directions are well separated in both.
					assert.Less(t, subspaceDist(refV.Slice(0, n, 0, 3), v.Slice(0, n, 0, 3)), 1e-11)
				}
			})
		}
	}
}

// SVDTop at a size where the Krylov path runs (UseTruncatedSVD), for every
// family, against the same backend's full SVD.
func TestSVDTopFamilies(t *testing.T) {
	const m, n, k = 260, 220, 3
	for _, be := range backendsUnderTest() {
		require.True(t, UseTruncatedSVD(be, n, k), "the Krylov path must be exercised")
		for fi, name := range familyNames {
			t.Run(be.Name()+"/"+name, func(t *testing.T) {
				a, spec := familyDense(name, uint64(200+fi), m, n)
				u, s, v, err := be.SVDTop(a, k)
				require.NoError(t, err)
				require.Len(t, s, k)
				requireDescending(t, s)
				assert.Less(t, orthoErr(u), 1e-10) // measured ≤ 5e-15
				assert.Less(t, orthoErr(v), 1e-12) // measured ≤ 5e-15
				fu, fs, fv, err := be.SVD(a)
				require.NoError(t, err)
				assert.InDeltaSlice(t, fs[:k], s, 1e-9*fs[0])
				if spec != nil {
					assert.InDeltaSlice(t, spec[:k], s, 1e-9*spec[0])
				}
				if topSubspaceUnique(name, k) {
					assert.Less(t, subspaceDist(fv.Slice(0, n, 0, k), v), 1e-8)
					assert.Less(t, subspaceDist(fu.Slice(0, m, 0, k), u), 1e-8)
				} else {
					// Inside a repeated value any basis of the span is
					// right: the vectors must still be singular vectors.
					var av, us mat.Dense
					av.Mul(a, v)
					us.Mul(u, mat.NewDiagDense(k, s))
					av.Sub(&av, &us)
					assert.Less(t, mat.Norm(&av, 2), 1e-9*s[0])
				}
			})
		}
	}
}

// A DP-noised low-rank matrix whose spikes barely clear a flat bulk: the
// Krylov SVD either meets its tolerance or reports non-convergence, and the
// backend method then falls back to the exact answer.
func TestSVDTopKrylovFlatSpectrum(t *testing.T) {
	const m, n, k = 300, 240, 3
	rng := newRNG(251)
	spec := append([]float64{1.3, 1.2, 1.1}, linspace(1, 1-1e-3, n-3)...)
	a := withSpectrum(rng, m, n, spec)
	_, _, fv, err := Gonum{}.SVD(a)
	require.NoError(t, err)
	for _, be := range backendsUnderTest() {
		t.Run(be.Name(), func(t *testing.T) {
			_, _, v, info, err := SVDTopKrylov(be, a, k, TruncOptions{MaxIter: 3})
			require.ErrorIs(t, err, ErrNotConverged)
			assert.Nil(t, v, "no basis is returned when the tolerance is not met")
			assert.Greater(t, info.SubspaceBound, DefaultTruncTol)

			_, _, v, info, err = SVDTopKrylov(be, a, k, TruncOptions{MaxIter: 400})
			if err != nil {
				require.ErrorIs(t, err, ErrNotConverged)
			} else {
				assert.LessOrEqual(t, info.SubspaceBound, DefaultTruncTol)
				assert.LessOrEqual(t, subspaceDist(fv.Slice(0, n, 0, k), v), info.SubspaceBound*1.01+1e-14)
				t.Logf("flat spectrum SVD: %d block products, bound %.2g", info.Iterations, info.SubspaceBound)
			}

			_, s, v, err := be.SVDTop(a, k)
			require.NoError(t, err)
			assert.InDeltaSlice(t, spec[:k], s, 1e-12)
			assert.Less(t, subspaceDist(fv.Slice(0, n, 0, k), v), 1e-8)
		})
	}
}

// The Krylov eigensolver itself (not the backend's choice of path) on every
// family, against the gonum full solver. Both backends run the Krylov
// iteration on their own kernels.
func TestEigSymTopKrylovFamilies(t *testing.T) {
	const n, k = 320, 3
	for fi, name := range familyNames {
		rng := newRNG(uint64(300 + fi))
		var a *mat.SymDense
		if name == "random" {
			a = randSym(rng, n, 1)
		} else {
			l := familySpectrum(name, n)
			if name == "ill-conditioned" {
				for i := 1; i < n; i += 2 {
					l[i] = -l[i] // indefinite, |λ| from 1 down to 1e-12
				}
			}
			a = symWithSpectrum(rng, l)
		}
		ref, refVecs, err := Gonum{}.EigSym(a)
		require.NoError(t, err)
		for _, be := range backendsUnderTest() {
			t.Run(be.Name()+"/"+name, func(t *testing.T) {
				vals, vecs, info, err := EigSymTopKrylov(be, a, k, TruncOptions{MaxIter: 400})
				require.NoError(t, err)
				assert.Less(t, orthoErr(vecs), 1e-12)
				assert.Less(t, eigResidual(a, vals, vecs), 1e-9)
				assert.InDeltaSlice(t, ref[:k], vals, 1e-9*math.Abs(ref[0]))
				if topSubspaceUnique(name, k) && !info.Degenerate {
					assert.LessOrEqual(t, info.SubspaceBound, DefaultTruncTol)
					assert.Less(t, subspaceDist(refVecs.Slice(0, n, 0, k), vecs), 1e-8)
				}
				if name != "flat spectrum" {
					return
				}
				// One more vector cuts into the flat bulk (λ4 − λ5 ≈ 3e-6):
				// no basis is accurate to 1e-10 at roundoff residuals, so
				// the solver must refuse, and the backend method must fall
				// back to the exact solver.
				_, vecs, info, err = EigSymTopKrylov(be, a, k+1, TruncOptions{MaxIter: 400})
				require.ErrorIs(t, err, ErrNotConverged)
				assert.Nil(t, vecs)
				assert.Greater(t, info.SubspaceBound, DefaultTruncTol)
				vals, vecs, err = be.EigSymTop(a, k+1)
				require.NoError(t, err)
				assert.InDeltaSlice(t, ref[:k+1], vals, 1e-12*ref[0])
				assert.Less(t, eigResidual(a, vals, vecs), 1e-13)
			})
		}
	}
}

func TestQRFamilies(t *testing.T) {
	const m, n = 60, 35
	for _, be := range backendsUnderTest() {
		for fi, name := range familyNames {
			t.Run(be.Name()+"/"+name, func(t *testing.T) {
				a, _ := familyDense(name, uint64(400+fi), m, n)
				q, r, err := be.QR(a)
				require.NoError(t, err)
				assert.Less(t, orthoErr(q), 1e-13) // measured ≤ 1.1e-15
				for i := 0; i < n; i++ {
					for j := 0; j < i; j++ {
						require.Zero(t, r.At(i, j))
					}
				}
				var qr mat.Dense
				qr.Mul(q, r)
				qr.Sub(&qr, a)
				norm := mat.Norm(a, 2)
				assert.Less(t, mat.Norm(&qr, 2), 1e-13*norm) // measured ≤ 7e-16‖A‖
				if name == "rank-deficient" {
					return // R's trailing rows are rounding noise: not comparable
				}
				// Full rank: R is unique up to the signs of its rows.
				_, ref, err := Gonum{}.QR(a)
				require.NoError(t, err)
				for i := 0; i < n; i++ {
					sg := math.Copysign(1, r.At(i, i)) * math.Copysign(1, ref.At(i, i))
					for j := i; j < n; j++ {
						require.InDelta(t, ref.At(i, j), sg*r.At(i, j), 1e-12*norm, "R[%d,%d]", i, j)
					}
				}
			})
		}
	}
}

func TestSPDSolveFamilies(t *testing.T) {
	const n, nrhs = 50, 2
	spd := func(name string, seed uint64) *mat.SymDense {
		rng := newRNG(seed)
		switch name {
		case "random":
			a := mat.NewSymDense(n, nil)
			a.SymOuterK(1, randDense(rng, n, 2*n))
			return a
		case "ill-conditioned": // condition number 1e8
			return symWithSpectrum(rng, logspace(0, -8, n))
		default:
			return symWithSpectrum(rng, familySpectrum(name, n))
		}
	}
	for _, be := range backendsUnderTest() {
		for fi, name := range familyNames {
			if name == "rank-deficient" {
				continue // below
			}
			t.Run(be.Name()+"/"+name, func(t *testing.T) {
				a := spd(name, uint64(500+fi))
				x0 := randDense(newRNG(uint64(550+fi)), n, nrhs)
				var b mat.Dense
				b.Mul(a, x0)
				x, err := be.SPDSolve(a, &b)
				require.NoError(t, err)
				vals, _, err := Gonum{}.EigSym(a)
				require.NoError(t, err)
				cond := vals[0] / vals[n-1]
				// Backward stable: residual ≲ n·u·‖A‖‖x‖ (measured ≤ 8e-17·‖A‖‖x‖);
				// forward error ≲ cond·u (measured ≤ cond·4e-16).
				var res mat.Dense
				res.Mul(a, x)
				res.Sub(&res, &b)
				assert.Less(t, mat.Norm(&res, 2), 1e-13*mat.Norm(a, 2)*mat.Norm(x, 2))
				var fe mat.Dense
				fe.Sub(x, x0)
				assert.Less(t, mat.Norm(&fe, 2)/mat.Norm(x0, 2), 1e-13*cond)
				ref, err := Gonum{}.SPDSolve(a, &b)
				require.NoError(t, err)
				assert.True(t, mat.EqualApprox(x, ref, 1e-12*cond*mat.Norm(x0, 2)))
			})
		}
		// Rank-deficient: an exactly singular positive semi-definite matrix
		// (rows 0 and 1 equal, with pivots that vanish exactly) is refused.
		t.Run(be.Name()+"/rank-deficient", func(t *testing.T) {
			a := mat.NewSymDense(n, nil)
			a.SymOuterK(1, randDense(newRNG(560), n, 2*n))
			for j := 0; j < n; j++ { // decouple rows/columns 0 and 1
				for _, i := range []int{0, 1} {
					if j != 0 && j != 1 {
						a.SetSym(i, j, 0)
					}
				}
			}
			a.SetSym(0, 0, 4)
			a.SetSym(0, 1, 4)
			a.SetSym(1, 1, 4)
			_, err := be.SPDSolve(a, randDense(newRNG(561), n, nrhs))
			assert.ErrorIs(t, err, ErrNotPositiveDefinite)
		})
	}
}
