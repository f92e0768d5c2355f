package rgrad

import (
	"math"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// design holds the n×(d1·d2) trace-regression design and the per-worker
// buffers of the passes over it. All buffers are allocated once per fit:
// the passes allocate nothing proportional to n.
type designPass struct {
	x       []float64 // row i at x[i*stride : i*stride+p]
	stride  int
	y       []float64
	n, p    int
	d1, d2  int
	workers int
	acc     [][]float64 // per worker, length p
	loss    []float64   // per worker
	clipped []int       // per worker
	// strict-mode scratch, per worker
	utx [][]float64 // r×d2
	xv  [][]float64 // d1×r
}

func newDesignPass(x *mat.Dense, y []float64, d1, d2 int) *designPass {
	raw := x.RawMatrix()
	n, p := raw.Rows, raw.Cols
	w := runtime.GOMAXPROCS(0)
	if w > n {
		w = n
	}
	if w < 1 {
		w = 1
	}
	dp := &designPass{x: raw.Data, stride: raw.Stride, y: y, n: n, p: p, d1: d1, d2: d2, workers: w,
		acc: make([][]float64, w), loss: make([]float64, w), clipped: make([]int, w)}
	for k := range dp.acc {
		dp.acc[k] = make([]float64, p)
	}
	return dp
}

func (dp *designPass) row(i int) []float64 { return dp.x[i*dp.stride : i*dp.stride+dp.p] }

// parallel runs f over contiguous row blocks, one per worker, and sums the
// workers' accumulators into out (length p).
func (dp *designPass) parallel(out []float64, f func(w, lo, hi int)) {
	var wg sync.WaitGroup
	for w := 0; w < dp.workers; w++ {
		lo, hi := w*dp.n/dp.workers, (w+1)*dp.n/dp.workers
		for j := range dp.acc[w] {
			dp.acc[w][j] = 0
		}
		dp.loss[w], dp.clipped[w] = 0, 0
		wg.Add(1)
		go func(w, lo, hi int) {
			defer wg.Done()
			f(w, lo, hi)
		}(w, lo, hi)
	}
	wg.Wait()
	copy(out, dp.acc[0])
	for w := 1; w < dp.workers; w++ {
		floats.Add(out, dp.acc[w])
	}
}

// moment sets out = Σ_i y_i x_i / n (before Λ⁻¹).
func (dp *designPass) moment(out []float64) {
	dp.parallel(out, func(w, lo, hi int) {
		acc := dp.acc[w]
		for i := lo; i < hi; i++ {
			floats.AddScaled(acc, dp.y[i], dp.row(i))
		}
	})
	floats.Scale(1/float64(dp.n), out)
}

// clippedMoment sets out = Σ_i clip(y_i, cy) · clip(x_i, cx) / n, clipping
// |y_i| ≤ cy and ‖x_i‖₂ ≤ cx, and returns the number of samples where some
// clipping was active.
func (dp *designPass) clippedMoment(out []float64, cx, cy float64) int {
	dp.parallel(out, func(w, lo, hi int) {
		acc := dp.acc[w]
		for i := lo; i < hi; i++ {
			x := dp.row(i)
			yi := dp.y[i]
			s := 1.0
			if nx := floats.Norm(x, 2); nx > cx {
				s = cx / nx
				dp.clipped[w]++
			}
			if math.Abs(yi) > cy {
				if s == 1 {
					dp.clipped[w]++
				}
				yi = math.Copysign(cy, yi)
			}
			floats.AddScaled(acc, s*yi, x)
		}
	})
	floats.Scale(1/float64(dp.n), out)
	return dp.sum(dp.clipped)
}

// gradient sets out = Σ_i (<x_i, m> − y_i) x_i / n in one fused pass and
// returns the least-squares loss Σ_i (<x_i, m> − y_i)² / (2n).
func (dp *designPass) gradient(out, m []float64) float64 {
	dp.parallel(out, func(w, lo, hi int) {
		acc := dp.acc[w]
		var loss float64
		for i := lo; i < hi; i++ {
			x := dp.row(i)
			res := floats.Dot(x, m) - dp.y[i]
			loss += res * res
			floats.AddScaled(acc, res, x)
		}
		dp.loss[w] = loss
	})
	floats.Scale(1/float64(dp.n), out)
	return dp.sumf(dp.loss) / (2 * float64(dp.n))
}

// clippedGradient sets out = Σ_i c_i·res_i·x_i / n where res_i = <x_i, m> −
// y_i and c_i = min(1, τ / ‖res_i·P_T(X_i)‖_F), so that the projected
// per-sample contributions c_i·res_i·P_T(X_i) have Frobenius norm ≤ τ. u is
// d1×r and vt is r×d2 (Vᵀ), both row-major. It returns the loss and the
// number of clipped samples.
func (dp *designPass) clippedGradient(out, m []float64, u, vt []float64, r int, tau float64) (float64, int) {
	d1, d2 := dp.d1, dp.d2
	if len(dp.utx) != dp.workers || len(dp.utx[0]) != r*d2 {
		dp.utx = make([][]float64, dp.workers)
		dp.xv = make([][]float64, dp.workers)
		for w := range dp.utx {
			dp.utx[w] = make([]float64, r*d2)
			dp.xv[w] = make([]float64, d1*r)
		}
	}
	dp.parallel(out, func(w, lo, hi int) {
		acc, utx, xv := dp.acc[w], dp.utx[w], dp.xv[w]
		var loss float64
		clipped := 0
		for i := lo; i < hi; i++ {
			x := dp.row(i)
			res := floats.Dot(x, m) - dp.y[i]
			loss += res * res
			wi, c := clippedWeight(x, res, u, vt, d1, d2, r, tau, utx, xv)
			if c {
				clipped++
			}
			floats.AddScaled(acc, wi, x)
		}
		dp.loss[w], dp.clipped[w] = loss, clipped
	})
	floats.Scale(1/float64(dp.n), out)
	return dp.sumf(dp.loss) / (2 * float64(dp.n)), dp.sum(dp.clipped)
}

// clippedWeight returns the weight w = c·res by which sample x (a row-major
// d1×d2 matrix) enters the clipped gradient Σ_i w_i x_i / n, where c =
// min(1, τ/‖res·P_T(x)‖_F) for the tangent space with column space u (d1×r,
// row-major) and row space vt (r×d2, row-major = Vᵀ), and whether clipping
// was active. utx (r·d2) and xv (d1·r) are scratch. Every per-sample term
// w·P_T(x) of the projected gradient thus has Frobenius norm ≤ τ
// (DERIVATIONS.md §5.1).
func clippedWeight(x []float64, res float64, u, vt []float64, d1, d2, r int, tau float64, utx, xv []float64) (float64, bool) {
	g := math.Abs(res) * projectedNorm(x, u, vt, d1, d2, r, utx, xv)
	if g > tau {
		return res * tau / g, true
	}
	return res, false
}

// projectedNorm returns ‖P_T(x)‖_F from ‖P_T x‖² = ‖Uᵀx‖² + ‖xV‖² − ‖UᵀxV‖²,
// with Uᵀx (r×d2) and xV (d1×r) accumulated in one sweep over the rows of x.
func projectedNorm(x, u, vt []float64, d1, d2, r int, utx, xv []float64) float64 {
	for j := range utx {
		utx[j] = 0
	}
	for a := 0; a < d1; a++ {
		xa := x[a*d2 : (a+1)*d2]
		for k := 0; k < r; k++ {
			floats.AddScaled(utx[k*d2:(k+1)*d2], u[a*r+k], xa)
			xv[a*r+k] = floats.Dot(xa, vt[k*d2:(k+1)*d2])
		}
	}
	n2 := floats.Dot(utx, utx) + floats.Dot(xv, xv)
	for k := 0; k < r; k++ {
		for l := 0; l < r; l++ {
			var c float64
			for a := 0; a < d1; a++ {
				c += u[a*r+k] * xv[a*r+l]
			}
			n2 -= c * c
		}
	}
	return math.Sqrt(math.Max(n2, 0))
}

func (dp *designPass) sum(v []int) int {
	s := 0
	for _, x := range v {
		s += x
	}
	return s
}

func (dp *designPass) sumf(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}
