package rgrad

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
)

func randn(rng *rand.Rand, r, c int) *mat.Dense {
	m := mat.NewDense(r, c, nil)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			m.Set(i, j, rng.NormFloat64())
		}
	}
	return m
}

func randPoint(t testing.TB, rng *rand.Rand, d1, d2, r int) Point {
	t.Helper()
	u, s, v, err := backend.Gonum{}.SVDTop(randn(rng, d1, d2), r)
	require.NoError(t, err)
	return Point{U: u, S: s, V: v}
}

func frob(a mat.Matrix) float64 { return mat.Norm(a, 2) }

func diff(a, b mat.Matrix) float64 {
	var d mat.Dense
	d.Sub(a, b)
	return frob(&d)
}

func inner(a, b mat.Matrix) float64 {
	var e mat.Dense
	e.MulElem(a, b)
	return mat.Sum(&e)
}

func numRank(t *testing.T, a mat.Matrix, tol float64) int {
	t.Helper()
	_, s, _, err := backend.Gonum{}.SVD(a)
	require.NoError(t, err)
	k := 0
	for _, v := range s {
		if v > tol*s[0] {
			k++
		}
	}
	return k
}

// P_T is an orthogonal projection containing M_l.
func TestTangentProjectionIdentities(t *testing.T) {
	for _, tc := range []struct{ d1, d2, r int }{{30, 20, 2}, {20, 15, 3}, {8, 8, 1}} {
		rng := rand.New(rand.NewPCG(1, uint64(tc.d1)))
		pt := randPoint(t, rng, tc.d1, tc.d2, tc.r)
		a, b := randn(rng, tc.d1, tc.d2), randn(rng, tc.d1, tc.d2)
		pa := TangentProject(pt.U, pt.V, a)
		assert.Less(t, diff(TangentProject(pt.U, pt.V, pa), pa), 1e-10, "idempotent")
		assert.InDelta(t, inner(pa, b), inner(a, TangentProject(pt.U, pt.V, b)), 1e-10, "self-adjoint")
		m := pt.Dense()
		assert.Less(t, diff(TangentProject(pt.U, pt.V, m), m), 1e-10, "P_T(M) = M")
		assert.LessOrEqual(t, numRank(t, pa, 1e-10), 2*tc.r, "rank ≤ 2r")
		var sum mat.Dense
		sum.Add(pa, TangentComplement(pt.U, pt.V, a))
		assert.Less(t, diff(&sum, a), 1e-10, "P_T + P_T⊥ = I")
		// The complement really is (I − UUᵀ) a (I − VVᵀ).
		pu := mat.NewDense(tc.d1, tc.d1, nil)
		pu.Mul(pt.U, pt.U.T())
		iu := eye(tc.d1)
		iu.Sub(iu, pu)
		pv := mat.NewDense(tc.d2, tc.d2, nil)
		pv.Mul(pt.V, pt.V.T())
		iv := eye(tc.d2)
		iv.Sub(iv, pv)
		var c1, c2 mat.Dense
		c1.Mul(iu, a)
		c2.Mul(&c1, iv)
		assert.Less(t, diff(&c2, TangentComplement(pt.U, pt.V, a)), 1e-10)
	}
}

func eye(n int) *mat.Dense {
	m := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		m.Set(i, i, 1)
	}
	return m
}

// The QR + 2r×2r SVD retraction equals SVD_r(P_T(A)).
func TestFastRetractionEqualsFullSVD(t *testing.T) {
	be := backend.Gonum{}
	for _, tc := range []struct {
		name       string
		d1, d2, r  int
		scale      float64
		degenerate bool
	}{
		{"default", 30, 20, 2, 0.3, false},
		{"rank3", 20, 15, 3, 1, false},
		{"rank1", 10, 40, 1, 0.1, false},
		{"tiny step", 30, 20, 2, 1e-6, false},
		{"on the manifold (rank-deficient complement)", 30, 20, 2, 0, true},
		{"fallback 2r > d", 5, 7, 3, 0.5, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(2, uint64(tc.d1*tc.r)))
			pt := randPoint(t, rng, tc.d1, tc.d2, tc.r)
			b := pt.Dense()
			if !tc.degenerate {
				e := randn(rng, tc.d1, tc.d2)
				e.Scale(tc.scale, e)
				b.Add(b, e)
			}
			fast, err := RetractFast(be, pt.U, pt.V, b, tc.r)
			require.NoError(t, err)
			full, err := RetractFull(be, pt.U, pt.V, b, tc.r)
			require.NoError(t, err)
			assert.Less(t, diff(fast.Dense(), full.Dense()), 1e-10)
			assert.InDeltaSlice(t, full.S, fast.S, 1e-10)
			assert.Less(t, orthErr(fast.U), 1e-10)
			assert.Less(t, orthErr(fast.V), 1e-10)
		})
	}
}

func orthErr(u *mat.Dense) float64 {
	_, r := u.Dims()
	var g mat.Dense
	g.Mul(u.T(), u)
	return diff(&g, eye(r))
}

// Eckart–Young, Lemma 4 and the curvature bound
// of Wei et al. on random perturbations.
func TestRetractionAndCurvatureBounds(t *testing.T) {
	be := backend.Gonum{}
	rng := rand.New(rand.NewPCG(3, 3))
	d1, d2, r := 30, 20, 2
	for trial := 0; trial < 20; trial++ {
		truth := randPoint(t, rng, d1, d2, r)
		truth.S = []float64{2, 1}
		m := truth.Dense()
		sr := truth.S[r-1]
		e := randn(rng, d1, d2)
		e.Scale(sr/8/frob(e)*rng.Float64(), e) // ‖M̂ − M‖_F < σr/8
		mh := mat.NewDense(d1, d2, nil)
		mh.Add(m, e)
		u, s, v, err := be.SVDTop(mh, r)
		require.NoError(t, err)
		svdr := Point{U: u, S: s, V: v}.Dense()
		ef, eo := frob(e), opNorm(t, e)
		// Eckart–Young: no rank-r matrix (M included) is closer to M̂.
		assert.LessOrEqual(t, diff(svdr, mh), ef+1e-12)
		assert.LessOrEqual(t, diff(svdr, m), ef+40*eo*ef/sr+1e-12, "Lemma 4 (Frobenius)")
		var pu, pt mat.Dense
		pu.Mul(u, u.T())
		pt.Mul(truth.U, truth.U.T())
		var dp mat.Dense
		dp.Sub(&pu, &pt)
		assert.LessOrEqual(t, opNorm(t, &dp), 8*eo/sr+1e-12, "Lemma 4 (subspace)")
		// Curvature: ‖P_T⊥(M_l − M)‖_F ≤ ‖M_l − M‖·‖M_l − M‖_F/σr.
		var dm mat.Dense
		dm.Sub(svdr, m)
		perp := TangentComplement(u, v, &dm)
		assert.LessOrEqual(t, frob(perp), opNorm(t, &dm)*frob(&dm)/sr+1e-12, "curvature bound")
	}
}

func opNorm(t *testing.T, a mat.Matrix) float64 {
	t.Helper()
	_, s, _, err := backend.Gonum{}.SVD(a)
	require.NoError(t, err)
	return s[0]
}

func TestAR1DesignInverse(t *testing.T) {
	p := 12
	for _, rho := range []float64{0.5, -0.3, 0} {
		d, err := ParseDesign("ar1:"+ftoa(rho), p, backend.Gonum{})
		require.NoError(t, err)
		lam := mat.NewDense(p, p, nil)
		for i := 0; i < p; i++ {
			for j := 0; j < p; j++ {
				lam.Set(i, j, math.Pow(rho, math.Abs(float64(i-j))))
			}
		}
		rng := rand.New(rand.NewPCG(4, 4))
		x := make([]float64, p)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		y := append([]float64(nil), x...)
		require.NoError(t, d.ApplyInv(y))
		var back mat.VecDense
		back.MulVec(lam, mat.NewVecDense(p, y))
		for i := range x {
			assert.InDelta(t, x[i], back.AtVec(i), 1e-12)
		}
		ev, _, err := backend.Gonum{}.EigSym(mat.NewSymDense(p, lam.RawMatrix().Data))
		require.NoError(t, err)
		assert.LessOrEqual(t, ev[0], d.Cu+1e-12)
		assert.GreaterOrEqual(t, ev[p-1], d.Cl-1e-12)
	}
	_, err := ParseDesign("ar1:1.5", p, backend.Gonum{})
	assert.Error(t, err)
	_, err = ParseDesign("nonsense", p, backend.Gonum{})
	assert.Error(t, err)
}

func newRng(s uint64) *rand.Rand { return rand.New(rand.NewPCG(s, 99)) }

func backendFor() backend.Backend { return backend.Gonum{} }

// A dense covariance read from a file acts like the closed-form AR(1) one.
func TestFileDesign(t *testing.T) {
	const p, rho = 10, 0.3
	var sb strings.Builder
	for i := 0; i < p; i++ {
		for j := 0; j < p; j++ {
			if j > 0 {
				sb.WriteString(" ")
			}
			sb.WriteString(ftoa(math.Pow(rho, math.Abs(float64(i-j)))))
		}
		sb.WriteString("\n")
	}
	path := filepath.Join(t.TempDir(), "lambda.txt")
	require.NoError(t, os.WriteFile(path, []byte(sb.String()), 0o600))
	fd, err := ParseDesign("file:"+path, p, backend.Gonum{})
	require.NoError(t, err)
	ad, err := ParseDesign("ar1:0.3", p, backend.Gonum{})
	require.NoError(t, err)
	// The finite-p spectrum lies inside the AR(1) bounds.
	assert.GreaterOrEqual(t, fd.Cl, ad.Cl-1e-12)
	assert.LessOrEqual(t, fd.Cu, ad.Cu+1e-12)
	x := make([]float64, p)
	for i := range x {
		x[i] = float64(i%3) - 1
	}
	a, b := append([]float64(nil), x...), append([]float64(nil), x...)
	require.NoError(t, fd.ApplyInv(a))
	require.NoError(t, ad.ApplyInv(b))
	assert.InDeltaSlice(t, b, a, 1e-10)
	// Wrong size and asymmetry are refused.
	_, err = ParseDesign("file:"+path, p+1, backend.Gonum{})
	assert.Error(t, err)
	require.NoError(t, os.WriteFile(path, []byte("1 0.5\n0.4 1\n"), 0o600))
	_, err = ParseDesign("file:"+path, 2, backend.Gonum{})
	assert.Error(t, err)
}

// TangentComplement returns P_T⊥(a) = (I − UUᵀ) a (I − VVᵀ).
func TangentComplement(u, v *mat.Dense, a mat.Matrix) *mat.Dense {
	out := mat.DenseCopyOf(a)
	out.Sub(out, TangentProject(u, v, a))
	return out
}
