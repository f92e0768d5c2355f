package kernel

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// randUserRows returns m rows of d standard normal features and responses.
func randUserRows(r *rand.Rand, m, d int) ([][]float64, []float64) {
	x := make([][]float64, m)
	y := make([]float64, m)
	for j := range x {
		x[j] = make([]float64, d)
		for p := range x[j] {
			x[j][p] = r.NormFloat64()
		}
		y[j] = r.NormFloat64()
	}
	return x, y
}

// The clipped term g vᵀ has Frobenius norm at most the clip at every scale
// (the norm neither overflows nor underflows) and is unchanged inside it.
func TestAddClippedOuter(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, scale := range []float64{1e-3, 1, 1e3, 1e150} {
		g := make([]float64, 7)
		v := make([]float64, 3)
		for i := range g {
			g[i] = r.NormFloat64() * scale
		}
		for i := range v {
			v[i] = r.NormFloat64()
		}
		acc := make([]float64, 21)
		clipped := AddClippedOuter(acc, g, v, 2)
		assert.LessOrEqual(t, SafeNorm(acc), 2*(1+1e-12), "scale %g", scale)
		full := SafeNorm(g) * SafeNorm(v)
		assert.Equal(t, full > 2, clipped, "scale %g", scale)
		if !clipped {
			for p := range g {
				for a := range v {
					assert.InDelta(t, g[p]*v[a], acc[p*3+a], 1e-12*full)
				}
			}
		}
	}
	acc := make([]float64, 2)
	assert.False(t, AddClippedOuter(acc, []float64{math.NaN()}, []float64{1, 1}, 1), "a term that is not finite adds nothing")
	assert.Equal(t, []float64{0, 0}, acc)
	assert.Equal(t, 0.0, OuterNorm([]float64{math.Inf(1)}, []float64{1}))
}

// The SPD solve and the pseudo-inverse agree with gonum's solutions; the
// head is the least-squares fit of y on Uᵀx.
func TestSolves(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 3))
	const d, k, m = 6, 3, 9
	x, y := randUserRows(r, m, d)
	u := make([]float64, d*k)
	for i := range u {
		u[i] = r.NormFloat64()
	}
	var s Scratch
	v := s.Head(Model{U: u, D: d, K: k}, x, y)
	a := mat.NewDense(m, k, nil)
	a.Mul(mat.NewDense(m, d, flat(x)), mat.NewDense(d, k, u))
	var want mat.VecDense
	require.NoError(t, want.SolveVec(a, mat.NewVecDense(m, y)))
	assert.InDeltaSlice(t, want.RawVector().Data, v, 1e-10)
	pv := make([]float64, k)
	PinvSolve(a.RawMatrix().Data, m, k, y, pv)
	assert.InDeltaSlice(t, want.RawVector().Data, pv, 1e-10)
	// Rank-deficient: the minimum-norm solution of [1 1]·v = 2 is (1, 1).
	PinvSolve([]float64{1, 1}, 1, 2, []float64{2}, pv[:2])
	assert.InDeltaSlice(t, []float64{1, 1}, pv[:2], 1e-12)
	assert.False(t, SolveSPD([]float64{1, 2, 2, 1}, []float64{1, 1}, 2), "an indefinite matrix is refused")
}

// The ridge head is (AᵀA + λI)⁻¹Aᵀy with λ = Ridge·tr(AᵀA)/k, A the rows
// projected on U, with more rows than k and with fewer; it does not depend
// on the rows' scale (λ scales with AᵀA); a user with fewer rows than k
// (least squares interpolates them, so its residual and gradient vanish)
// keeps a residual and a gradient under the ridge.
func TestRidgeHead(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 5))
	const d, k = 6, 3
	u := make([]float64, d*k)
	for i := range u {
		u[i] = r.NormFloat64()
	}
	for _, tc := range []struct {
		name  string
		m     int
		ridge float64
	}{{"more rows than k", 9, 0.1}, {"fewer rows than k", 2, 0.1}, {"tiny ridge", 2, 1e-3}, {"large ridge", 5, 10}} {
		t.Run(tc.name, func(t *testing.T) {
			x, y := randUserRows(r, tc.m, d)
			a := mat.NewDense(tc.m, k, nil)
			a.Mul(mat.NewDense(tc.m, d, flat(x)), mat.NewDense(d, k, u))
			var g mat.SymDense
			g.SymOuterK(1, a.T())
			lam := tc.ridge * mat.Trace(&g) / k
			for q := 0; q < k; q++ {
				g.SetSym(q, q, g.At(q, q)+lam)
			}
			var aty, want mat.VecDense
			aty.MulVec(a.T(), mat.NewVecDense(tc.m, y))
			require.NoError(t, want.SolveVec(&g, &aty))
			var s Scratch
			m := Model{U: u, D: d, K: k, Ridge: tc.ridge}
			v := append([]float64(nil), s.Head(m, x, y)...)
			assert.InDeltaSlice(t, want.RawVector().Data, v, 1e-9)
			big := make([][]float64, len(x))
			for j := range x {
				big[j] = make([]float64, d)
				for p := range x[j] {
					big[j][p] = 1e3 * x[j][p]
				}
			}
			vb := s.Head(m, big, y)
			for q := range v {
				assert.InDelta(t, v[q]/1e3, vb[q], 1e-9*math.Abs(v[q]), "scale-free: rows ×1000, head ÷1000")
			}
			if tc.m < k {
				g0, _ := s.UserGradient(Model{U: u, D: d, K: k}, x, y, x, y)
				assert.Less(t, SafeNorm(g0), 1e-9, "least squares interpolates: no gradient")
				g1, _ := s.UserGradient(m, x, y, x, y)
				assert.Greater(t, SafeNorm(g1), 1e-6, "the ridge keeps a gradient")
			}
		})
	}
}

// flat concatenates rows.
func flat(x [][]float64) []float64 {
	var out []float64
	for _, r := range x {
		out = append(out, r...)
	}
	return out
}

// The U-statistic term equals the textbook pair sum, its norm bound is an
// upper bound, and the clipped term has norm at most the clip.
func TestUstat(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 5))
	for _, m0 := range []int{3, 8} { // the Gram and the explicit-product bounds
		const d = 5
		x, y := randUserRows(r, m0, d)
		z := make([]float64, d*d)
		for j := 0; j < m0; j++ {
			for l := 0; l < m0; l++ {
				if j != l {
					for p := 0; p < d; p++ {
						for q := 0; q < d; q++ {
							z[p*d+q] += y[j] * x[j][p] * y[l] * x[l][q] / float64(m0*(m0-1))
						}
					}
				}
			}
		}
		at, rt := make([]float64, m0*d), make([]float64, m0*d)
		for _, clip := range []float64{math.Inf(1), 0.1} {
			f, nrm, clipped, ok := Ustat(x, y, d, clip, at, rt, make([]float64, d), make([]float64, d*d))
			require.True(t, ok)
			got := make([]float64, d*d)
			for j := 0; j < m0; j++ {
				for p := 0; p < d; p++ {
					for q := 0; q < d; q++ {
						got[p*d+q] += f * at[j*d+p] * rt[j*d+q]
					}
				}
			}
			assert.GreaterOrEqual(t, nrm, Norm(z)*(1-1e-12), "m0 = %d", m0)
			if clipped {
				assert.LessOrEqual(t, Norm(got), clip*(1+1e-12))
			} else {
				assert.InDeltaSlice(t, z, got, 1e-12, "m0 = %d", m0)
			}
		}
	}
	_, _, _, ok := Ustat([][]float64{{1}}, []float64{1}, 1, 1, make([]float64, 1), make([]float64, 1), make([]float64, 1), make([]float64, 1))
	assert.False(t, ok, "one row has no term")
}

// Each Priv-AltMin row is clipped: W = g ⊗ v̂ has norm min(‖x‖‖v‖, cw).
func TestAltMinRow(t *testing.T) {
	g := make([]float64, 2)
	yt, ok := AltMinRow([]float64{3, 4}, 5, 2, 4, 1, g)
	require.True(t, ok)
	assert.Equal(t, 1.0, yt)
	assert.InDelta(t, 4, SafeNorm(g), 1e-15)
	_, ok = AltMinRow([]float64{0, 0}, 1, 1, 1, 1, g)
	assert.False(t, ok)
}

func TestUsersChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		ok   bool
	}{
		{"clipped sum within users·clip", CheckUsersSum([]float64{1, 0, 0, 1}, 2, true, 2, 1, 1), true},
		{"clipped sum too long", CheckUsersSum([]float64{3, 0, 0, 3}, 2, true, 2, 0, 1), false},
		{"asymmetric U-statistic", CheckUsersSum([]float64{0, 1, 0, 0}, 2, true, 2, 0, 0), false},
		{"0-1 loss above the users", CheckHoldout(3, 2, 5, true), false},
		{"altmin within bounds", CheckAltMin([]float64{1}, []float64{1}, 1, 1, 1, 1, 1), true},
		{"altmin b too long", CheckAltMin([]float64{1}, []float64{2}, 1, 1, 1, 1, 1), false},
	} {
		assert.Equal(t, tc.ok, tc.err == nil, tc.name)
	}
}

// TestLeaveOneOutTwoRows: a user with two rows scores the cosine between
// their difference and span(U) (closed form), 0 when the labels agree, and
// the same for squared and accuracy scores.
func TestLeaveOneOutTwoRows(t *testing.T) {
	u := []float64{1, 0, 0, 1, 0, 0} // d = 3, k = 2: the first two axes
	m := Model{U: u, D: 3, K: 2}
	for _, tc := range []struct {
		name   string
		x1, x2 []float64
		y      []float64
		want   float64
	}{
		{"difference in span", []float64{1, 2, 0}, []float64{0, 0, 0}, []float64{1, -1}, 1},
		{"difference orthogonal", []float64{1, 1, 3}, []float64{1, 1, 0}, []float64{1, -1}, 0},
		{"45 degrees", []float64{1, 0, 1}, []float64{0, 0, 0}, []float64{0.5, -2}, 1 / math.Sqrt2},
		{"labels agree", []float64{1, 2, 0}, []float64{0, 0, 0}, []float64{1, 1}, 0},
		{"equal rows", []float64{1, 2, 0}, []float64{1, 2, 0}, []float64{1, -1}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Scratch
			for _, acc := range []bool{false, true} {
				assert.InDelta(t, tc.want, s.LeaveOneOut(m, [][]float64{tc.x1, tc.x2}, tc.y, acc), 1e-12)
			}
		})
	}
}
