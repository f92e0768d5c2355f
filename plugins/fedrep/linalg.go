package fedrep

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
)

// orthonormalize returns Q of the thin QR of a (d×k, d ≥ k) through the
// backend; if R is numerically singular it falls back to the polar factor
// of the thin SVD (DERIVATIONS.md §11), which also spans the best rank-k subspace.
func orthonormalize(be backend.Backend, a *mat.Dense) (*mat.Dense, error) {
	d, k := a.Dims()
	for _, v := range a.RawMatrix().Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("re-orthonormalization: iterate is not finite (step size or noise too large)")
		}
	}
	q, r, err := be.QR(a)
	if err == nil {
		maxd, mind := 0.0, math.Inf(1)
		for i := 0; i < k; i++ {
			x := math.Abs(r.At(i, i))
			maxd, mind = math.Max(maxd, x), math.Min(mind, x)
		}
		if maxd > 0 && mind > 1e-10*maxd {
			return q, nil
		}
	}
	u, _, v, err := be.SVD(a)
	if err != nil {
		return nil, fmt.Errorf("re-orthonormalization: %w", err)
	}
	out := mat.NewDense(d, k, nil)
	out.Mul(u, v.T())
	return out, nil
}

// norm2 is a scaled Euclidean norm that neither overflows nor underflows.
func norm2(x []float64) float64 {
	scale, ssq := 0.0, 1.0
	for _, v := range x {
		if v == 0 {
			continue
		}
		a := math.Abs(v)
		if scale < a {
			ssq = 1 + ssq*(scale/a)*(scale/a)
			scale = a
		} else {
			ssq += (a / scale) * (a / scale)
		}
	}
	return scale * math.Sqrt(ssq)
}

// allFinite reports whether every element is finite.
func allFinite(x []float64) bool {
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// ClipFrobenius returns M·min(1, tau/‖M‖_F) (a copy): the clipping used on
// every per-user contribution.
func ClipFrobenius(m *mat.Dense, tau float64) *mat.Dense {
	out := mat.DenseCopyOf(m)
	nrm := norm2(out.RawMatrix().Data)
	if nrm > tau {
		out.Scale(tau/nrm, out)
	}
	return out
}

// solveSmallSPD solves g·x = h in place for a k×k symmetric matrix g (row
// major, overwritten by its Cholesky factor), returning false when g is not
// numerically positive definite (pivot ≤ tol·max diagonal).
func solveSmallSPD(g []float64, h []float64, k int) bool {
	maxd := 0.0
	for i := 0; i < k; i++ {
		maxd = math.Max(maxd, g[i*k+i])
	}
	if !(maxd > 0) || math.IsInf(maxd, 0) {
		return false
	}
	tol := 1e-11 * maxd
	for j := 0; j < k; j++ {
		s := g[j*k+j]
		for p := 0; p < j; p++ {
			s -= g[j*k+p] * g[j*k+p]
		}
		if !(s > tol) {
			return false
		}
		l := math.Sqrt(s)
		g[j*k+j] = l
		for i := j + 1; i < k; i++ {
			t := g[i*k+j]
			for p := 0; p < j; p++ {
				t -= g[i*k+p] * g[j*k+p]
			}
			g[i*k+j] = t / l
		}
	}
	for i := 0; i < k; i++ { // forward: L z = h
		t := h[i]
		for p := 0; p < i; p++ {
			t -= g[i*k+p] * h[p]
		}
		h[i] = t / g[i*k+i]
	}
	for i := k - 1; i >= 0; i-- { // backward: Lᵀ x = z
		t := h[i]
		for p := i + 1; p < k; p++ {
			t -= g[p*k+i] * h[p]
		}
		h[i] = t / g[i*k+i]
	}
	return allFinite(h)
}

// pinvSolve returns the minimum-norm least-squares solution of a·v ≈ y for
// a small rows×k matrix a (the rare fallback of the local solves; it
// allocates).
func pinvSolve(a []float64, rows, k int, y []float64, v []float64) {
	for i := range v {
		v[i] = 0
	}
	if rows == 0 {
		return
	}
	am := mat.NewDense(rows, k, append([]float64(nil), a[:rows*k]...))
	var svd mat.SVD
	if !svd.Factorize(am, mat.SVDThin) {
		return
	}
	s := svd.Values(nil)
	var u, w mat.Dense
	svd.UTo(&u)
	svd.VTo(&w)
	for j, sj := range s {
		if !(sj > 1e-12*s[0]) {
			continue
		}
		var c float64
		for i := 0; i < rows; i++ {
			c += u.At(i, j) * y[i]
		}
		c /= sj
		for a := 0; a < k; a++ {
			v[a] += c * w.At(a, j)
		}
	}
	if !allFinite(v) {
		for i := range v {
			v[i] = 0
		}
	}
}

// chunkBounds splits n users into c contiguous chunks; chunk i is
// [lo, hi). Chunks depend only on n and c, never on the number of threads,
// so sums reduced chunk by chunk in order are bit-reproducible.
func chunkBounds(n, c, i int) (lo, hi int) { return i * n / c, (i + 1) * n / c }

// workers is the number of goroutines used for per-user work.
func workers(chunks int) int { return max(1, min(runtime.GOMAXPROCS(0), chunks)) }

// parallelChunks runs fn(worker, chunk) for every chunk on a fixed pool of
// goroutines; worker indexes per-goroutine scratch. It stops early and
// returns ctx.Err() when the context is cancelled.
func parallelChunks(ctx context.Context, chunks int, fn func(worker, chunk int)) error {
	nw := workers(chunks)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < nw; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				c := int(next.Add(1) - 1)
				if c >= chunks || ctx.Err() != nil {
					return
				}
				fn(w, c)
			}
		}(w)
	}
	wg.Wait()
	return ctx.Err()
}
