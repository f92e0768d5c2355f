package fedrep

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/kernel"
)

// ustatAggregate returns (1/n) Σ_i clip(Z_i, ψ_init) (upper triangle filled,
// d×d) over the users' training halves, where
//
//	Z_i = (s sᵀ − Σ_j y_j² x_j x_jᵀ) / (m0(m0−1)),  s = Σ_j y_j x_j,
//
// is the unbiased U-statistic of w_i* w_i*ᵀ (DERIVATIONS.md §2, the pair
// count matched to the m0 rows actually used), and the number of clipped
// users. psi = +Inf disables clipping; users with fewer than two training
// rows contribute zero.
//
// Z_i is never formed: with rescaled rows ã_j = (y_j/c_y)(x_j/c_x) (entries
// in [−1, 1], so nothing overflows) and r_j = Σ_{l≠j} ã_l (prefix + suffix
// sums, no cancellation), Z_i ∝ Σ_j ã_j r_jᵀ = ÃᵀR. Its Frobenius norm comes
// from the m0×m0 Grams, ‖ÃᵀR‖² = Σ_{jl} (ã_j·ã_l)(r_j·r_l), to which a
// rigorous bound on the rounding error is added, so the clip factor never
// lets a contribution exceed ψ; the scaled rows of many users are then
// stacked and summed with one backend product PᵀQ per block (BLAS gemm in
// the OpenBLAS build). Users with m0 ≥ d get the explicit d×d product.
//
// When norms is not nil (length n) it receives every user's unclipped
// ‖Z_i‖_F (0 for users who contribute nothing), for the private quantile of
// DERIVATIONS.md §12.
func ustatAggregate(ctx context.Context, be backend.Backend, x *mat.Dense, y []float64, lay *layout, psi float64, norms []float64) (*mat.SymDense, int, error) {
	raw := x.RawMatrix()
	d := raw.Cols
	n := lay.n()
	chunks := max(1, min(n, 32, int(8e6/float64(d*d))))
	block := max(2048, lay.maxM0)
	ws := make([]*ustatWorker, workers(chunks))
	for w := range ws {
		ws[w] = newUstatWorker(be, d, block)
	}
	part := make([][]float64, chunks)
	nclip := make([]int, chunks)
	errs := make([]error, chunks)
	err := parallelChunks(ctx, chunks, func(w, c int) {
		if part[c] == nil {
			part[c] = make([]float64, d*d)
		}
		s := ws[w]
		s.acc, s.rows = part[c], 0
		lo, hi := chunkBounds(n, chunks, c)
		for i := lo; i < hi && errs[c] == nil; i++ {
			clipped, z, err := s.addUser(raw, y, lay.users[i], psi)
			if norms != nil {
				norms[i] = z
			}
			if clipped {
				nclip[c]++
			}
			errs[c] = err
		}
		if errs[c] == nil {
			errs[c] = s.flush()
		}
	})
	if err != nil {
		return nil, 0, err
	}
	for _, e := range errs {
		if e != nil {
			return nil, 0, fmt.Errorf("accumulating the U-statistic: %w", e)
		}
	}
	clipped := 0
	for _, c := range nclip {
		clipped += c
	}
	return meanUpper(part, d, n), clipped, nil
}

// meanUpper returns (1/n) Σ_c parts[c] as a symmetric matrix, reading the
// upper triangles of the d×d row-major partial sums (nil parts skipped).
func meanUpper(parts [][]float64, d, n int) *mat.SymDense {
	out := mat.NewSymDense(d, nil)
	o := out.RawSymmetric()
	for _, pc := range parts {
		if pc == nil {
			continue
		}
		for p := 0; p < d; p++ {
			for q := p; q < d; q++ {
				o.Data[p*o.Stride+q] += pc[p*d+q]
			}
		}
	}
	inv := 1 / float64(n)
	for p := 0; p < d; p++ {
		for q := p; q < d; q++ {
			o.Data[p*o.Stride+q] *= inv
		}
	}
	return out
}

// ustatWorker is one worker's scratch for ustatAggregate: a block of
// stacked scaled rows P (the ã_j) and Q (the r_j) of several users, summed
// into acc by one product PᵀQ when the block is full.
type ustatWorker struct {
	be           backend.Backend
	d, block     int
	p, q, prefix []float64
	prod         []float64   // d×d scratch of kernel.Ustat
	xs           [][]float64 // a user's rows
	tmp, pm, qm  *mat.Dense  // pm, qm: reusable views of p and q
	acc          []float64   // the current chunk's d×d partial sum
	rows         int         // rows stacked in p and q
}

func newUstatWorker(be backend.Backend, d, block int) *ustatWorker {
	return &ustatWorker{be: be, d: d, block: block, p: make([]float64, block*d), q: make([]float64, block*d),
		prefix: make([]float64, d), prod: make([]float64, d*d), tmp: mat.NewDense(d, d, nil), pm: &mat.Dense{}, qm: &mat.Dense{}}
}

// flush adds PᵀQ of the stacked rows to the upper triangle of acc.
func (s *ustatWorker) flush() error {
	if s.rows == 0 {
		return nil
	}
	d := s.d
	s.pm.SetRawMatrix(blas64.General{Rows: s.rows, Cols: d, Stride: d, Data: s.p[:s.rows*d]})
	s.qm.SetRawMatrix(blas64.General{Rows: s.rows, Cols: d, Stride: d, Data: s.q[:s.rows*d]})
	if err := s.be.Mul(s.tmp, s.pm, true, s.qm, false); err != nil {
		return err
	}
	t := s.tmp.RawMatrix()
	for i := 0; i < d; i++ {
		row := s.acc[i*d+i : i*d+d]
		tr := t.Data[i*t.Stride+i : i*t.Stride+d]
		for j := range row {
			row[j] += tr[j]
		}
	}
	s.rows = 0
	return nil
}

// addUser stacks one user's clipped contribution (kernel.Ustat) and
// reports whether it was clipped and its unclipped norm (an upper bound
// on ‖Z_i‖_F; 0 for a user without a term).
func (s *ustatWorker) addUser(raw blas64.General, y []float64, ur userRows, psi float64) (bool, float64, error) {
	d := s.d
	m0 := ur.t1 - ur.t0
	if m0 < 2 {
		return false, 0, nil
	}
	if s.rows+m0 > s.block {
		if err := s.flush(); err != nil {
			return false, 0, err
		}
	}
	at := s.p[s.rows*d : (s.rows+m0)*d]
	rt := s.q[s.rows*d : (s.rows+m0)*d]
	xs := s.xs[:0]
	for r := ur.t0; r < ur.t1; r++ {
		xs = append(xs, raw.Data[r*raw.Stride:r*raw.Stride+d])
	}
	s.xs = xs
	f, z, clipped, ok := kernel.Ustat(xs, y[ur.t0:ur.t1], d, psi, at, rt, s.prefix, s.prod)
	if !ok {
		return false, 0, nil
	}
	for p := range at {
		at[p] *= f
	}
	s.rows += m0
	return clipped, z, nil
}
