// Package clip holds the row clipping every worst-case estimator of the pca
// and orbit plugins starts from: rows scaled down to a public norm, their
// clipped sum (for a private mean) and their clipped second moment
// S = scale·Σ_i w_i²(x_i − μ)(x_i − μ)ᵀ with w_i = min(1, c/‖x_i − μ‖).
//
// Replacing one row changes the clipped sum by at most 2c in ℓ2 and the
// clipped second moment by at most √2·c²·scale in Frobenius norm; the
// derivations are in plugins/pca/DERIVATIONS.md.
package clip

import (
	"context"
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
)

// blockFloats bounds the scratch space of a blocked second moment (floats).
const blockFloats = 1 << 20

// chunks is the fixed number of row chunks a large second moment is split
// into when the backend is single-threaded; the chunks run concurrently and
// are summed in a fixed order, so the result does not depend on GOMAXPROCS.
const chunks = 4

// parallelWork is the n·p² above which SecondMoment splits into chunks.
const parallelWork = 5e7

// countSlack keeps rows whose norm exceeds the clip only by rounding (unit
// rows clipped to 1, say) out of the clipped-row count.
const countSlack = 1 + 2e-9

// Finite scans X for NaN/Inf and names the first offending entry.
func Finite(x *mat.Dense) error {
	n, p := x.Dims()
	for i := 0; i < n; i++ {
		for j, v := range x.RawRowView(i)[:p] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("data row %d, column %d: value %v is not finite", i, j, v)
			}
		}
	}
	return nil
}

// CheckMoment verifies that a second-moment matrix is finite; a non-finite
// entry means the data hold a NaN/Inf (or overflow) in that column, which
// is then located in x (when x is not nil).
func CheckMoment(g *mat.SymDense, x *mat.Dense) error {
	p := g.SymmetricDim()
	for j := 0; j < p; j++ {
		for k := j; k < p; k++ {
			if v := g.At(j, k); math.IsNaN(v) || math.IsInf(v, 0) {
				if x == nil {
					return fmt.Errorf("second-moment entry (%d, %d) = %v is not finite", j, k, v)
				}
				if err := Finite(x); err != nil {
					return err
				}
				return fmt.Errorf("second moment of columns %d and %d overflows (%v): rescale the data", j, k, v)
			}
		}
	}
	return nil
}

// SecondMoment returns scale·Σ_i w_i²(x_i−μ)(x_i−μ)ᵀ with
// w_i = min(1, c/‖x_i−μ‖) (c ≤ 0 or +Inf: no clipping; mu nil: μ = 0) and
// the number of rows the clip shrank. When no row is centred or clipped the
// product is computed by be.Gram on views of X itself, without copying X;
// otherwise rows are copied in blocks of bounded size. With a
// single-threaded backend a large product is split into a fixed number of
// row chunks computed concurrently. x is never written.
func SecondMoment(ctx context.Context, be backend.Backend, x *mat.Dense, mu []float64, c, scale float64) (*mat.SymDense, int, error) {
	n, p := x.Dims()
	doClip := c > 0 && !math.IsInf(c, 1)
	needCopy := mu != nil || (doClip && anyLonger(x, c))
	nc := 1
	if be.Threads() <= 1 && float64(n)*float64(p)*float64(p) >= parallelWork && n >= 4*chunks {
		nc = chunks
	}
	type part struct {
		g     *mat.SymDense
		nClip int
		err   error
	}
	parts := make([]part, nc)
	var wg sync.WaitGroup
	for k := 0; k < nc; k++ {
		a, b := k*n/nc, (k+1)*n/nc
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !needCopy {
				parts[k].g = be.Gram(scale, x.Slice(a, b, 0, p))
				return
			}
			parts[k].g, parts[k].nClip, parts[k].err = blocked(ctx, be, x, a, b, mu, c, scale, doClip)
		}()
	}
	wg.Wait()
	out := parts[0].g
	nClipped := 0
	for k, pt := range parts {
		if pt.err != nil {
			return nil, 0, pt.err
		}
		nClipped += pt.nClip
		if k > 0 {
			out.AddSym(out, pt.g)
		}
	}
	return out, nClipped, nil
}

// anyLonger reports whether some row of x has norm above c.
func anyLonger(x *mat.Dense, c float64) bool {
	n, p := x.Dims()
	c2 := c * c
	for i := 0; i < n; i++ {
		var s float64
		for _, v := range x.RawRowView(i)[:p] {
			s += v * v
		}
		if s > c2 {
			return true
		}
	}
	return false
}

// blocked returns scale·Σ over rows a ≤ i < b of the centred, clipped
// outer products, copying rows in bounded blocks.
func blocked(ctx context.Context, be backend.Backend, x *mat.Dense, a, b int, mu []float64, c, scale float64, doClip bool) (*mat.SymDense, int, error) {
	_, p := x.Dims()
	nClipped := 0
	bs := max(1, min(b-a, blockFloats/p))
	buf := make([]float64, bs*p)
	out := mat.NewSymDense(p, nil)
	for start := a; start < b; start += bs {
		if err := ctx.Err(); err != nil {
			return nil, 0, fmt.Errorf("second moment: %w", err)
		}
		end := min(b, start+bs)
		m := end - start
		blk := mat.NewDense(m, p, buf[:m*p])
		for i := 0; i < m; i++ {
			row := blk.RawRowView(i)
			copy(row, x.RawRowView(start + i)[:p])
			if mu != nil {
				for j := range row {
					row[j] -= mu[j]
				}
			}
			if doClip && shrink(row, c) {
				nClipped++
			}
		}
		out.AddSym(out, be.Gram(scale, blk))
	}
	return out, nClipped, nil
}

// shrink scales row to norm c when it is longer, and reports whether it
// was longer than c by more than rounding.
func shrink(row []float64, c float64) bool {
	var s float64
	for _, v := range row {
		s += v * v
	}
	if s <= c*c {
		return false
	}
	f := c / math.Sqrt(s)
	for j := range row {
		row[j] *= f
	}
	return s > c*c*countSlack
}

// Sum returns Σ_i x_i·min(1, c/‖x_i‖), the clipped sum a private mean
// noises (replace-one ℓ2 sensitivity 2c).
func Sum(ctx context.Context, x *mat.Dense, c float64) ([]float64, error) {
	n, p := x.Dims()
	sum := make([]float64, p)
	for i := 0; i < n; i++ {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("clipped sum: %w", err)
			}
		}
		row := x.RawRowView(i)[:p]
		var s float64
		for _, v := range row {
			s += v * v
		}
		f := 1.0
		if s > c*c {
			f = c / math.Sqrt(s)
		}
		for j, v := range row {
			sum[j] += f * v
		}
	}
	return sum, nil
}

// MomentSensitivity is the replace-one Frobenius sensitivity √2·c²·scale of
// SecondMoment: ‖xxᵀ − yyᵀ‖_F² = ‖x‖⁴ + ‖y‖⁴ − 2(xᵀy)² ≤ 2c⁴ for rows of
// norm ≤ c, with equality for orthogonal rows of norm c.
func MomentSensitivity(c, scale float64) float64 {
	return math.Sqrt2 * c * c * scale
}
