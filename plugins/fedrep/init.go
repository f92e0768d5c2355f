package fedrep

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
)

// ustatAggregateLoop is the reference form of ustatAggregate (same inputs
// and outputs): it forms the upper triangle of every user's d×d matrix
// Σ_j ã_j r_jᵀ explicitly with plain loops and takes its Frobenius norm
// directly. Tests check the blocked backend path against it.
func ustatAggregateLoop(ctx context.Context, x *mat.Dense, y []float64, lay *layout, psi float64) (*mat.SymDense, int, error) {
	raw := x.RawMatrix()
	d := raw.Cols
	n := lay.n()
	// Bound the per-chunk d×d accumulators to ~64 MB in total.
	chunks := max(1, min(n, 32, int(8e6/float64(d*d))))
	nw := workers(chunks)
	part := make([][]float64, chunks)
	nclip := make([]int, chunks)
	type scratch struct{ at, r, prefix, m []float64 }
	ws := make([]scratch, nw)
	for w := range ws {
		ws[w] = scratch{at: make([]float64, lay.maxM0*d), r: make([]float64, lay.maxM0*d), prefix: make([]float64, d), m: make([]float64, d*d)}
	}
	err := parallelChunks(ctx, chunks, func(w, c int) {
		if part[c] == nil {
			part[c] = make([]float64, d*d)
		}
		acc := part[c]
		s := ws[w]
		lo, hi := chunkBounds(n, chunks, c)
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

// ustatAggregate returns (1/n) Σ_i clip(Z_i, ψ_init) (upper triangle filled,
// d×d) over the users' training halves, where
//
//	Z_i = (s sᵀ − Σ_j y_j² x_j x_jᵀ) / (m0(m0−1)),  s = Σ_j y_j x_j,
//
// is the unbiased U-statistic of w_i* w_i*ᵀ (spec §3; 003 Alg. 2 with the
// pair count matched to the m0 points actually used), and the number of
// clipped users. psi = +Inf disables clipping; users with fewer than two
// training rows contribute zero.
//
// Z_i is never formed: with rescaled rows ã_j = (y_j/c_y)(x_j/c_x) (entries
// in [−1, 1], so nothing overflows) and r_j = Σ_{l≠j} ã_l (prefix + suffix
// sums, no cancellation), Z_i ∝ Σ_j ã_j r_jᵀ = ÃᵀR. Its Frobenius norm comes
// from the m0×m0 Grams, ‖ÃᵀR‖² = Σ_{jl} (ã_j·ã_l)(r_j·r_l), to which a
// rigorous bound on the rounding error is added, so the clip factor never
// lets a contribution exceed ψ; the scaled rows of many users are then
// stacked and summed with one backend product PᵀQ per block (BLAS gemm in
// the OpenBLAS build). Users with m0 ≥ d get the explicit d×d product.
func ustatAggregate(ctx context.Context, be backend.Backend, x *mat.Dense, y []float64, lay *layout, psi float64) (*mat.SymDense, int, error) {
	raw := x.RawMatrix()
	d := raw.Cols
	n := lay.n()
	chunks := max(1, min(n, 32, int(8e6/float64(d*d))))
	nw := workers(chunks)
	block := max(2048, lay.maxM0)
	type scratch struct {
		p, q, prefix []float64
		tmp, pm, qm  *mat.Dense // pm, qm: reusable views of p and q
	}
	ws := make([]scratch, nw)
	for w := range ws {
		ws[w] = scratch{p: make([]float64, block*d), q: make([]float64, block*d), prefix: make([]float64, d), tmp: mat.NewDense(d, d, nil),
			pm: &mat.Dense{}, qm: &mat.Dense{}}
	}
	part := make([][]float64, chunks)
	nclip := make([]int, chunks)
	errs := make([]error, chunks)
	const unit = 0x1p-53
	err := parallelChunks(ctx, chunks, func(w, c int) {
		if part[c] == nil {
			part[c] = make([]float64, d*d)
		}
		acc, s := part[c], &ws[w]
		rows := 0
		flush := func() {
			if rows == 0 {
				return
			}
			s.pm.SetRawMatrix(blas64.General{Rows: rows, Cols: d, Stride: d, Data: s.p[:rows*d]})
			s.qm.SetRawMatrix(blas64.General{Rows: rows, Cols: d, Stride: d, Data: s.q[:rows*d]})
			if err := be.Mul(s.tmp, s.pm, true, s.qm, false); err != nil {
				errs[c] = err
				return
			}
			t := s.tmp.RawMatrix()
			for i := 0; i < d; i++ {
				row := acc[i*d+i : i*d+d]
				tr := t.Data[i*t.Stride+i : i*t.Stride+d]
				for j := range row {
					row[j] += tr[j]
				}
			}
			rows = 0
		}
		lo, hi := chunkBounds(n, chunks, c)
		for i := lo; i < hi; i++ {
			ur := lay.users[i]
			m0 := ur.t1 - ur.t0
			if m0 < 2 {
				continue
			}
			cx, cy := userMaxAbs(raw, y, ur.t0, ur.t1, d)
			if cx == 0 || cy == 0 {
				continue
			}
			if rows+m0 > block {
				flush()
			}
			at := s.p[rows*d : (rows+m0)*d]
			rt := s.q[rows*d : (rows+m0)*d]
			for j := 0; j < m0; j++ {
				r := ur.t0 + j
				yj := y[r] / cy
				xr := raw.Data[r*raw.Stride : r*raw.Stride+d]
				aj := at[j*d : (j+1)*d]
				for p := range aj {
					aj[p] = yj * (xr[p] / cx)
				}
			}
			for p := range s.prefix {
				s.prefix[p] = 0
			}
			for j := 0; j < m0; j++ {
				copy(rt[j*d:(j+1)*d], s.prefix)
				aj := at[j*d : (j+1)*d]
				for p := range aj {
					s.prefix[p] += aj[p]
				}
			}
			for p := range s.prefix {
				s.prefix[p] = 0
			}
			for j := m0 - 1; j >= 0; j-- {
				rj := rt[j*d : (j+1)*d]
				for p := range rj {
					rj[p] += s.prefix[p]
				}
				aj := at[j*d : (j+1)*d]
				for p := range aj {
					s.prefix[p] += aj[p]
				}
			}
			var nrm float64
			if m0 < d {
				// ‖ÃᵀR‖² = Σ_{jl} (ã_j·ã_l)(r_j·r_l), plus the rounding bound.
				var sum, bound float64
				for j := 0; j < m0; j++ {
					aj, rj := at[j*d:(j+1)*d], rt[j*d:(j+1)*d]
					bound += norm2(aj) * norm2(rj)
					for l := 0; l <= j; l++ {
						al, rl := at[l*d:(l+1)*d], rt[l*d:(l+1)*d]
						var ga, gr float64
						for p := 0; p < d; p++ {
							ga += aj[p] * al[p]
							gr += rj[p] * rl[p]
						}
						if l == j {
							sum += ga * gr
						} else {
							sum += 2 * ga * gr
						}
					}
				}
				nrm = math.Sqrt(math.Max(sum, 0) + 4*float64(d+m0*m0+2)*unit*bound*bound)
			} else {
				s.pm.SetRawMatrix(blas64.General{Rows: m0, Cols: d, Stride: d, Data: at})
				s.qm.SetRawMatrix(blas64.General{Rows: m0, Cols: d, Stride: d, Data: rt})
				if err := be.Mul(s.tmp, s.pm, true, s.qm, false); err != nil {
					errs[c] = err
					return
				}
				nrm = norm2(s.tmp.RawMatrix().Data) * (1 + 4*float64(m0+d)*unit)
			}
			if nrm == 0 || math.IsNaN(nrm) {
				continue
			}
			scale := (cy * cx) * (cy * cx) / float64(m0*(m0-1))
			if z := nrm * scale; z > psi || math.IsInf(z, 1) {
				scale = psi / nrm
				nclip[c]++
			}
			for p := range at {
				at[p] *= scale
			}
			rows += m0
		}
		flush()
	})
	if err != nil {
		return nil, 0, err
	}
	for _, e := range errs {
		if e != nil {
			return nil, 0, fmt.Errorf("U-statistic accumulation: %w", e)
		}
	}
	out := mat.NewSymDense(d, nil)
	o := out.RawSymmetric()
	clipped := 0
	inv := 1 / float64(n)
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
	for p := 0; p < d; p++ {
		for q := p; q < d; q++ {
			o.Data[p*o.Stride+q] *= inv
		}
	}
	return out, clipped, nil
}

// userMaxAbs returns the largest |x| entry and |y| over the rows [t0, t1)
// of one user (the user's own scale, used to rescale its contribution
// before clipping).
func userMaxAbs(raw blas64.General, y []float64, t0, t1, d int) (cx, cy float64) {
	for r := t0; r < t1; r++ {
		cy = math.Max(cy, math.Abs(y[r]))
		for _, v := range raw.Data[r*raw.Stride : r*raw.Stride+d] {
			cx = math.Max(cx, math.Abs(v))
		}
	}
	return cx, cy
}
