package backend

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 17)) }

func randDense(rng *rand.Rand, m, n int) *mat.Dense {
	d := make([]float64, m*n)
	for i := range d {
		d[i] = rng.NormFloat64()
	}
	return mat.NewDense(m, n, d)
}

// randOrtho returns an n×k matrix with orthonormal columns.
func randOrtho(rng *rand.Rand, n, k int) *mat.Dense {
	var qr mat.QR
	qr.Factorize(randDense(rng, n, k))
	var q mat.Dense
	qr.QTo(&q)
	return mat.DenseCopyOf(q.Slice(0, n, 0, k))
}

// withSpectrum returns U·diag(s)·Vᵀ for random orthonormal U (m×r), V (n×r).
func withSpectrum(rng *rand.Rand, m, n int, s []float64) *mat.Dense {
	r := len(s)
	u, v := randOrtho(rng, m, r), randOrtho(rng, n, r)
	for j := 0; j < r; j++ {
		for i := 0; i < m; i++ {
			u.Set(i, j, u.At(i, j)*s[j])
		}
	}
	var a mat.Dense
	a.Mul(u, v.T())
	return &a
}

// symWithSpectrum returns Q·diag(l)·Qᵀ for a random orthogonal Q.
func symWithSpectrum(rng *rand.Rand, l []float64) *mat.SymDense {
	n := len(l)
	q := randOrtho(rng, n, n)
	out := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			var s float64
			for t := 0; t < n; t++ {
				s += q.At(i, t) * l[t] * q.At(j, t)
			}
			out.SetSym(i, j, s)
		}
	}
	return out
}

// randSym returns a symmetric matrix with N(0, σ²) entries (GOE-like).
func randSym(rng *rand.Rand, n int, sigma float64) *mat.SymDense {
	out := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			out.SetSym(i, j, sigma*rng.NormFloat64())
		}
	}
	return out
}

// spikedNoisy returns a DP-noised spiked matrix: Σ_i λ_i u_i u_iᵀ plus a
// symmetric Gaussian noise matrix whose spectrum is a semicircle on
// [−edge, edge]. Beyond the spikes the spectrum is flat (a bulk).
func spikedNoisy(rng *rand.Rand, n int, spikes []float64, edge float64) *mat.SymDense {
	a := randSym(rng, n, edge/(2*math.Sqrt(float64(n))))
	u := randOrtho(rng, n, len(spikes))
	var low mat.Dense
	us := mat.DenseCopyOf(u)
	for j, l := range spikes {
		for i := 0; i < n; i++ {
			us.Set(i, j, us.At(i, j)*l)
		}
	}
	low.Mul(us, u.T())
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			a.SetSym(i, j, a.At(i, j)+low.At(i, j))
		}
	}
	return a
}

func linspace(a, b float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = a + (b-a)*float64(i)/float64(max(n-1, 1))
	}
	return out
}

func logspace(a, b float64, n int) []float64 {
	out := linspace(a, b, n)
	for i := range out {
		out[i] = math.Pow(10, out[i])
	}
	return out
}

// orthoErr returns ‖QᵀQ − I‖_max.
func orthoErr(q mat.Matrix) float64 {
	_, k := q.Dims()
	var g mat.Dense
	g.Mul(q.T(), q)
	var e float64
	for i := 0; i < k; i++ {
		for j := 0; j < k; j++ {
			want := 0.0
			if i == j {
				want = 1
			}
			e = math.Max(e, math.Abs(g.At(i, j)-want))
		}
	}
	return e
}

// subspaceDist returns ‖sin Θ‖_F between the column spaces of the
// orthonormal a and b (same width): ‖(I − aaᵀ)b‖_F.
func subspaceDist(a, b mat.Matrix) float64 {
	var c, p mat.Dense
	c.Mul(a.T(), b)
	p.Mul(a, &c)
	p.Sub(b, &p)
	return mat.Norm(&p, 2)
}

// eigResidual returns ‖A·V − V·diag(λ)‖_F / max(1, ‖A‖_F).
func eigResidual(a mat.Symmetric, vals []float64, vecs mat.Matrix) float64 {
	var av mat.Dense
	av.Mul(a, vecs)
	n, k := vecs.Dims()
	for j := 0; j < k; j++ {
		for i := 0; i < n; i++ {
			av.Set(i, j, av.At(i, j)-vals[j]*vecs.At(i, j))
		}
	}
	return mat.Norm(&av, 2) / math.Max(1, mat.Norm(a, 2))
}

// svdResidual returns ‖A − U·diag(s)·Vᵀ‖_F / max(1, ‖A‖_F).
func svdResidual(a mat.Matrix, u mat.Matrix, s []float64, v mat.Matrix) float64 {
	us := mat.DenseCopyOf(u)
	m, k := us.Dims()
	for j := 0; j < k; j++ {
		for i := 0; i < m; i++ {
			us.Set(i, j, us.At(i, j)*s[j])
		}
	}
	var r mat.Dense
	r.Mul(us, v.T())
	r.Sub(a, &r)
	return mat.Norm(&r, 2) / math.Max(1, mat.Norm(a, 2))
}

func requireDescending(t *testing.T, v []float64) {
	t.Helper()
	for i := 1; i < len(v); i++ {
		require.GreaterOrEqual(t, v[i-1], v[i], "values not descending at %d", i)
	}
}

func TestTransposeHelpers(t *testing.T) {
	for _, n := range []int{1, 2, 31, 33, 70} {
		a := randDense(newRNG(uint64(n)), n, n)
		want := mat.DenseCopyOf(a.T())
		data := append([]float64(nil), a.RawMatrix().Data...)
		transposeSquare(data, n)
		require.True(t, mat.Equal(want, mat.NewDense(n, n, data)), "n=%d", n)
		r := randDense(newRNG(uint64(n)), n, n+5)
		out := make([]float64, n*(n+5))
		transposeInto(out, n, r.RawMatrix().Data, n+5, n, n+5)
		require.True(t, mat.Equal(r.T(), mat.NewDense(n+5, n, out)), "n=%d", n)
	}
}
