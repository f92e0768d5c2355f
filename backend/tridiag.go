package backend

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/lapack/gonum"
	"gonum.org/v1/gonum/mat"
)

// eigSymTopTridiag returns the k largest eigenpairs of a (values
// descending, vectors in columns) without forming all n eigenvectors:
// a = Q T Qᵀ (dsytrd, dorgtr), T's eigenvalues by dsterf, and each wanted
// eigenvector of T by inverse iteration at its eigenvalue (dgtsv on the
// shifted tridiagonal), orthogonalised against the ones found before it,
// then mapped back by Q. The full decomposition spends most of its time
// applying the QL rotations to all n vectors (dsteqr's dlasr, O(n³)); this
// path costs the reduction and O(n²k). Every vector must meet a residual
// ‖T x − λ x‖ ≤ 1e-11·‖T‖ (the full solver's accuracy is about 1e-15·‖T‖);
// otherwise ErrNotConverged, and the caller falls back to the full solver.
func eigSymTopTridiag(a mat.Symmetric, k int) (vals []float64, vecs *mat.Dense, err error) {
	defer catch("top-k symmetric eigenpairs", &err)
	n := a.SymmetricDim()
	buf, uplo := symTriangle(a)
	if !allFinite(buf) {
		return nil, nil, fmt.Errorf("top-k symmetric eigenpairs: %w", ErrNonFinite)
	}
	var impl gonum.Implementation
	d, e, tau := make([]float64, n), make([]float64, max(n-1, 1)), make([]float64, max(n-1, 1))
	work := []float64{0}
	impl.Dsytrd(uplo, n, buf, n, d, e, tau, work, -1)
	work = make([]float64, int(work[0]))
	impl.Dsytrd(uplo, n, buf, n, d, e, tau, work, len(work))
	impl.Dorgtr(uplo, n, buf, n, tau, work[:1], -1)
	if int(work[0]) > len(work) {
		work = make([]float64, int(work[0]))
	}
	impl.Dorgtr(uplo, n, buf, n, tau, work, len(work))
	q := mat.NewDense(n, n, buf)

	w := append([]float64(nil), d...)
	ew := append([]float64(nil), e[:n-1]...)
	if !impl.Dsterf(n, w, ew) {
		return nil, nil, fmt.Errorf("top-k symmetric eigenpairs (%d×%d): %w", n, n, ErrNotConverged)
	}
	tnorm := 0.0
	for i := range n {
		r := math.Abs(d[i])
		if i > 0 {
			r += math.Abs(e[i-1])
		}
		if i < n-1 {
			r += math.Abs(e[i])
		}
		tnorm = math.Max(tnorm, r)
	}
	if tnorm == 0 {
		tnorm = 1
	}
	x := mat.NewDense(n, k, nil)
	col := make([]float64, n)
	dl, dd, du := make([]float64, n), make([]float64, n), make([]float64, n)
	vals = make([]float64, k)
	for j := range k {
		lambda := w[n-1-j] // dsterf sorts ascending
		vals[j] = lambda
		// A deterministic start with weight on every coordinate.
		for i := range col {
			col[i] = 1 + 0.5*math.Sin(float64(1+i*(j+3)))
		}
		shift := lambda + 8*eps*tnorm
		for range 4 {
			copy(dl, e[:n-1])
			copy(du, e[:n-1])
			for i := range n {
				dd[i] = d[i] - shift
			}
			if !impl.Dgtsv(n, 1, dl[:n-1], dd, du[:n-1], col, 1) {
				shift += 8 * eps * tnorm // an exactly singular shift: move it
				continue
			}
			for p := range j { // Gram–Schmidt against the vectors found before
				var dot float64
				for i := range n {
					dot += col[i] * x.At(i, p)
				}
				for i := range n {
					col[i] -= dot * x.At(i, p)
				}
			}
			if nrm := floats.Norm(col, 2); nrm > 0 && !math.IsInf(nrm, 0) {
				for i := range col {
					col[i] /= nrm
				}
			} else {
				return nil, nil, fmt.Errorf("top-k symmetric eigenpairs: inverse iteration broke down: %w", ErrNotConverged)
			}
		}
		if r := tridiagResidual(d, e[:n-1], col, lambda); r > 1e-11*tnorm {
			return nil, nil, fmt.Errorf("top-k symmetric eigenpairs: residual %.3g of ‖T‖ = %.3g: %w", r, tnorm, ErrNotConverged)
		}
		x.SetCol(j, col)
	}
	vecs = mat.NewDense(n, k, nil)
	vecs.Mul(q, x)
	return vals, vecs, nil
}

// eps is the float64 unit roundoff.
const eps = 0x1p-53

// tridiagResidual is ‖T x − λ x‖₂ for the symmetric tridiagonal T with
// diagonal d and off-diagonal e.
func tridiagResidual(d, e, x []float64, lambda float64) float64 {
	n := len(d)
	var s float64
	for i := range n {
		r := (d[i] - lambda) * x[i]
		if i > 0 {
			r += e[i-1] * x[i-1]
		}
		if i < n-1 {
			r += e[i] * x[i+1]
		}
		s += r * r
	}
	return math.Sqrt(s)
}
