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
