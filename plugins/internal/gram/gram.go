// Package gram computes the clipped, centred second moment of rows
//
//	S = scale·Σ_i w_i²(x_i − μ)(x_i − μ)ᵀ,  w_i = min(1, c/‖x_i − μ‖),
//
// the product every worst-case PCA estimator starts from (the definition,
// its sensitivity and the reference implementation are in
// plugins/internal/clip). When rows must be copied to be centred or
// clipped and the BLAS runs on several threads, the reference copies each
// block on one thread while the BLAS threads wait, then multiplies it on
// all of them, synchronising them at every block. Here the rows are split
// into a fixed number of chunks, and each core copies and multiplies its
// own chunk with a single-threaded BLAS, accumulating by rank-k updates
// (syrk with β = 1) into one matrix per chunk; the chunks are summed in a
// fixed order, so the result is deterministic and does not depend on the
// number of threads.
package gram

import (
	"context"
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/plugins/internal/clip"
)

// blockFloats bounds the copy buffer of each running chunk (floats).
const blockFloats = 1 << 20

// minWork is the n·p² below which splitting is not worth goroutines.
const minWork = 5e7

// countSlack keeps rows whose norm exceeds the clip only by rounding out of
// the clipped-row count (as plugins/internal/clip does).
const countSlack = 1 + 2e-9

// SecondMoment returns scale·Σ_i w_i²(x_i−μ)(x_i−μ)ᵀ with
// w_i = min(1, c/‖x_i−μ‖) (c ≤ 0 or +Inf: no clipping; mu nil: μ = 0) and
// the number of rows the clip shrank: the same quantity as
// clip.SecondMoment, to rounding. It splits the product over the cores
// (see the package comment) when rows must be copied (centring or
// clipping), the backend runs its products on several threads through
// gonum's blas64 with a settable thread count (the openblas backend) and
// the product is large; otherwise it is clip.SecondMoment. While it runs,
// the backend's BLAS is single-threaded (other BLAS calls of the process
// run on one thread meanwhile). x is never written.
func SecondMoment(ctx context.Context, be backend.Backend, x *mat.Dense, mu []float64, c, scale float64) (*mat.SymDense, int, error) {
	n, p := x.Dims()
	doClip := c > 0 && !math.IsInf(c, 1)
	ts, settable := be.(threadSetter)
	threads := be.Threads()
	if !settable || threads <= 1 || be.Name() != "openblas" ||
		float64(n)*float64(p)*float64(p) < minWork || (mu == nil && !doClip) {
		return clip.SecondMoment(ctx, be, x, mu, c, scale)
	}
	if mu != nil && len(mu) != p {
		return nil, 0, fmt.Errorf("second moment: mean of length %d for %d columns", len(mu), p)
	}
	splitMu.Lock()
	defer splitMu.Unlock()
	return split(ctx, ts.SetThreads, threads, x, mu, c, scale, doClip, max(1, blockFloats/p))
}

// splitMu serialises the products that change the BLAS thread count.
var splitMu sync.Mutex

// threadSetter is a backend whose BLAS thread count can be changed (the
// openblas backend).
type threadSetter interface {
	SetThreads(n int)
}

// splitChunks is the fixed number of row chunks split multiplies
// separately and sums in order, so the result does not depend on the
// number of threads.
const splitChunks = 4

// split computes the product on splitChunks row chunks, at most threads at
// a time, each chunk copied block by block and multiplied by a
// single-threaded BLAS in its own goroutine; the BLAS thread count is set
// to one meanwhile (by set) and restored afterwards. Every core then
// copies and multiplies on its own, without the multi-threaded BLAS's
// synchronisation between its threads, which a loaded machine makes
// costly.
func split(ctx context.Context, set func(int), threads int, x *mat.Dense, mu []float64, c, scale float64, doClip bool, bs int) (*mat.SymDense, int, error) {
	n, p := x.Dims()
	set(1)
	defer set(threads)
	type part struct {
		g        *mat.SymDense
		nClipped int
		err      error
	}
	parts := make([]part, splitChunks)
	sem := make(chan struct{}, max(1, threads))
	var wg sync.WaitGroup
	for k := range splitChunks {
		a, b := k*n/splitChunks, (k+1)*n/splitChunks
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			g := mat.NewSymDense(p, nil)
			raw := g.RawSymmetric()
			buf := make([]float64, min(bs, max(b-a, 1))*p)
			for start := a; start < b; start += bs {
				if err := ctx.Err(); err != nil {
					parts[k].err = fmt.Errorf("second moment: %w", err)
					return
				}
				m := min(bs, b-start)
				parts[k].nClipped += fill(buf[:m*p], x, start, m, mu, c, doClip)
				blas64.Syrk(blas.Trans, scale, blas64.General{Rows: m, Cols: p, Stride: p, Data: buf[:m*p]}, 1, raw)
			}
			parts[k].g = g
		}()
	}
	wg.Wait()
	out := parts[0].g
	nClipped := 0
	for k, pt := range parts {
		if pt.err != nil {
			return nil, 0, pt.err
		}
		nClipped += pt.nClipped
		if k > 0 {
			out.AddSym(out, pt.g)
		}
	}
	return out, nClipped, nil
}

// fill copies rows [start, start+m) of x into dst (m×p, contiguous),
// centred by mu and shrunk to norm c, and returns how many rows the clip
// shrank by more than rounding.
func fill(dst []float64, x *mat.Dense, start, m int, mu []float64, c float64, doClip bool) int {
	_, p := x.Dims()
	c2 := c * c
	nClipped := 0
	for i := 0; i < m; i++ {
		row := dst[i*p : (i+1)*p]
		src := x.RawRowView(start + i)[:p]
		var s float64
		if mu != nil {
			for j, v := range src {
				v -= mu[j]
				row[j] = v
				s += v * v
			}
		} else {
			copy(row, src)
			for _, v := range row {
				s += v * v
			}
		}
		if !doClip || s <= c2 {
			continue
		}
		f := c / math.Sqrt(s)
		for j := range row {
			row[j] *= f
		}
		if s > c2*countSlack {
			nClipped++
		}
	}
	return nClipped
}
