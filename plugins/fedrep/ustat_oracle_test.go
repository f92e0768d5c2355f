package fedrep

import (
	"context"
	"math"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/kernel"
)

// ustatAggregateLoop is the reference form of the users.ustat pass's mean
// (1/n) Σ_i clip(Z_i, ψ) and clipped count: it forms the upper triangle
// of every user's d×d matrix Σ_j ã_j r_jᵀ explicitly with plain loops and
// takes its Frobenius norm directly. Tests check the pass against it.
func ustatAggregateLoop(ctx context.Context, x *mat.Dense, y []float64, lay *layout, psi float64) (*mat.SymDense, int, error) {
	raw := x.RawMatrix()
	d := raw.Cols
	n := lay.n()
	// Bound the per-chunk d×d accumulators to ~64 MB in total.
	chunks := max(1, min(n, 32, int(8e6/float64(d*d))))
	part := make([][]float64, chunks)
	nclip := make([]int, chunks)
	type scratch struct{ at, r, prefix, m []float64 }
	ws := make([]scratch, chunks)
	for w := range ws {
		ws[w] = scratch{at: make([]float64, lay.maxM0*d), r: make([]float64, lay.maxM0*d), prefix: make([]float64, d), m: make([]float64, d*d)}
	}
	err := kernel.ParallelChunks(ctx, chunks, func(_, c int) {
		if part[c] == nil {
			part[c] = make([]float64, d*d)
		}
		acc := part[c]
		s := ws[c]
		lo, hi := c*n/chunks, (c+1)*n/chunks
		for i := lo; i < hi; i++ {
			ur := lay.users[i]
			m0 := ur.t1 - ur.t0
			if m0 < 2 {
				continue
			}
			// Rescale: ã_j = (y_j/cy)(x_j/cx), entries in [−1, 1].
			cx, cy := userMaxAbs(raw, y, ur.t0, ur.t1, d)
			if cx == 0 || cy == 0 {
				continue
			}
			for j := 0; j < m0; j++ {
				r := ur.t0 + j
				yj := y[r] / cy
				xr := raw.Data[r*raw.Stride : r*raw.Stride+d]
				aj := s.at[j*d : (j+1)*d]
				for p := range aj {
					aj[p] = yj * (xr[p] / cx)
				}
			}
			// r_j = Σ_{l<j} ã_l + Σ_{l>j} ã_l without subtraction.
			for p := range s.prefix {
				s.prefix[p] = 0
			}
			for j := 0; j < m0; j++ {
				copy(s.r[j*d:(j+1)*d], s.prefix)
				aj := s.at[j*d : (j+1)*d]
				for p := range aj {
					s.prefix[p] += aj[p]
				}
			}
			for p := range s.prefix {
				s.prefix[p] = 0
			}
			for j := m0 - 1; j >= 0; j-- {
				rj := s.r[j*d : (j+1)*d]
				for p := range rj {
					rj[p] += s.prefix[p]
				}
				aj := s.at[j*d : (j+1)*d]
				for p := range aj {
					s.prefix[p] += aj[p]
				}
			}
			// M̃ = Σ_j ã_j r_jᵀ (symmetric; upper triangle).
			mm := s.m
			for p := 0; p < d; p++ {
				row := mm[p*d+p : p*d+d]
				for q := range row {
					row[q] = 0
				}
			}
			for j := 0; j < m0; j++ {
				aj := s.at[j*d : (j+1)*d]
				rj := s.r[j*d : (j+1)*d]
				for p := 0; p < d; p++ {
					ap := aj[p]
					if ap == 0 {
						continue
					}
					row := mm[p*d+p : p*d+d]
					rr := rj[p:d]
					for q := range row {
						row[q] += ap * rr[q]
					}
				}
			}
			// The matrix is symmetric in exact arithmetic: its norm is that
			// of the symmetric matrix the upper triangle defines.
			var diag, off float64
			for p := 0; p < d; p++ {
				diag += mm[p*d+p] * mm[p*d+p]
				for q := p + 1; q < d; q++ {
					off += mm[p*d+q] * mm[p*d+q]
				}
			}
			nrm := math.Sqrt(diag + 2*off)
			if nrm == 0 || math.IsNaN(nrm) {
				continue
			}
			scale := (cy * cx) * (cy * cx) / float64(m0*(m0-1))
			if z := nrm * scale; z > psi || math.IsInf(z, 1) {
				scale = psi / nrm
				nclip[c]++
			}
			for p := 0; p < d; p++ {
				for q := p; q < d; q++ {
					acc[p*d+q] += scale * mm[p*d+q]
				}
			}
		}
	})
	if err != nil {
		return nil, 0, err
	}
	out := mat.NewSymDense(d, nil)
	o := out.RawSymmetric()
	clipped := 0
	for c := 0; c < chunks; c++ {
		clipped += nclip[c]
		if part[c] == nil {
			continue
		}
		for p := 0; p < d; p++ {
			for q := p; q < d; q++ {
				o.Data[p*o.Stride+q] += part[c][p*d+q]
			}
		}
	}
	inv := 1 / float64(n)
	for p := 0; p < d; p++ {
		for q := p; q < d; q++ {
			o.Data[p*o.Stride+q] *= inv
		}
	}
	return out, clipped, nil
}

// userMaxAbs returns the largest |x| entry and |y| over the rows [t0, t1)
// of one user (the reference's own rescaling).
func userMaxAbs(raw blas64.General, y []float64, t0, t1, d int) (cx, cy float64) {
	for r := t0; r < t1; r++ {
		cy = math.Max(cy, math.Abs(y[r]))
		for _, v := range raw.Data[r*raw.Stride : r*raw.Stride+d] {
			cx = math.Max(cx, math.Abs(v))
		}
	}
	return cx, cy
}
