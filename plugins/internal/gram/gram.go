// Package gram computes the clipped, centred second moment of rows
//
//	S = scale·Σ_i w_i²(x_i − μ)(x_i − μ)ᵀ,  w_i = min(1, c/‖x_i − μ‖),
//
// the product every worst-case PCA estimator starts from (the definition,
// its sensitivity and the reference implementation are in
// plugins/internal/clip). When rows must be copied to be centred or
// clipped, the copy of each block runs in its own goroutine while the
// multi-threaded BLAS multiplies the previous block, and every block is
// accumulated into one output by a rank-k update (syrk with β = 1), so the
// product is not held up by the copy and no per-block matrix is allocated.
// The blocks are multiplied in row order whatever the scheduling, so the
// result is deterministic.
package gram

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/plugins/internal/clip"
)

// blockFloats bounds each of the copy buffers (floats); bufs buffers are in
// flight (one being multiplied, the others being filled).
const (
	blockFloats = 1 << 20
	bufs        = 3
)

// minWork is the n·p² below which overlapping is not worth a goroutine.
const minWork = 5e7

// countSlack keeps rows whose norm exceeds the clip only by rounding out of
// the clipped-row count (as plugins/internal/clip does).
const countSlack = 1 + 2e-9

// SecondMoment returns scale·Σ_i w_i²(x_i−μ)(x_i−μ)ᵀ with
// w_i = min(1, c/‖x_i−μ‖) (c ≤ 0 or +Inf: no clipping; mu nil: μ = 0) and
// the number of rows the clip shrank: the same quantity as
// clip.SecondMoment, to rounding. It pipelines the copy and the product
// (see the package comment) when rows must be copied, the backend runs its
// products on several threads through gonum's blas64 (the gonum and
// openblas backends do) and the product is large; otherwise it is
// clip.SecondMoment. x is never written.
func SecondMoment(ctx context.Context, be backend.Backend, x *mat.Dense, mu []float64, c, scale float64) (*mat.SymDense, int, error) {
	n, p := x.Dims()
	doClip := c > 0 && !math.IsInf(c, 1)
	if be.Threads() <= 1 || (be.Name() != "openblas" && be.Name() != "gonum") ||
		float64(n)*float64(p)*float64(p) < minWork || (mu == nil && !doClip) {
		return clip.SecondMoment(ctx, be, x, mu, c, scale)
	}
	if mu != nil && len(mu) != p {
		return nil, 0, fmt.Errorf("second moment: mean of length %d for %d columns", len(mu), p)
	}
	return pipelined(ctx, x, mu, c, scale, doClip, max(1, min(n, blockFloats/p)))
}

// block is a filled copy buffer: rows [start, start+m) centred and
// clipped.
type block struct {
	buf      []float64
	m        int
	nClipped int
	err      error
}

// pipelined fills blocks of bs rows in a goroutine and multiplies them
// here, in order.
func pipelined(ctx context.Context, x *mat.Dense, mu []float64, c, scale float64, doClip bool, bs int) (*mat.SymDense, int, error) {
	n, p := x.Dims()
	free := make(chan []float64, bufs)
	for range bufs {
		free <- make([]float64, bs*p)
	}
	filled := make(chan block, bufs)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(filled)
		for start := 0; start < n; start += bs {
			var buf []float64
			select {
			case buf = <-free:
			case <-stop:
				return
			}
			if err := ctx.Err(); err != nil {
				filled <- block{err: fmt.Errorf("second moment: %w", err)}
				return
			}
			m := min(bs, n-start)
			filled <- block{buf: buf, m: m, nClipped: fill(buf[:m*p], x, start, m, mu, c, doClip)}
		}
	}()
	out := mat.NewSymDense(p, nil)
	raw := out.RawSymmetric()
	nClipped := 0
	for b := range filled {
		if b.err != nil {
			return nil, 0, b.err
		}
		nClipped += b.nClipped
		a := blas64.General{Rows: b.m, Cols: p, Stride: p, Data: b.buf[:b.m*p]}
		blas64.Syrk(blas.Trans, scale, a, 1, raw)
		free <- b.buf
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
