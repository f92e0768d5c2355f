package backend

import (
	"fmt"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// Gonum is the pure-Go implementation built on gonum/mat and gonum/lapack.
type Gonum struct{}

// Name implements Backend.
func (Gonum) Name() string { return "gonum" }

// Threads implements Backend: gonum's kernels are single-threaded.
func (Gonum) Threads() int { return 1 }

// Gram implements Backend with a BLAS syrk.
func (Gonum) Gram(alpha float64, a mat.Matrix) *mat.SymDense {
	_, c := a.Dims()
	out := mat.NewSymDense(c, nil)
	var raw blas64.General
	if rd, ok := a.(mat.RawMatrixer); ok {
		raw = rd.RawMatrix()
	} else {
		raw = mat.DenseCopyOf(a).RawMatrix()
	}
	blas64.Syrk(blas.Trans, alpha, raw, 0, out.RawSymmetric())
	return out
}

// Mul implements Backend.
func (Gonum) Mul(dst *mat.Dense, a mat.Matrix, transA bool, b mat.Matrix, transB bool) error {
	if transA {
		a = a.T()
	}
	if transB {
		b = b.T()
	}
	ar, ac := a.Dims()
	br, bc := b.Dims()
	if ac != br {
		return fmt.Errorf("mul %d×%d by %d×%d: %w", ar, ac, br, bc, ErrShape)
	}
	if !dst.IsEmpty() {
		if r, c := dst.Dims(); r != ar || c != bc {
			return fmt.Errorf("mul destination %d×%d, want %d×%d: %w", r, c, ar, bc, ErrShape)
		}
	}
	dst.Mul(a, b)
	return nil
}

// EigSym implements Backend.
func (Gonum) EigSym(a mat.Symmetric) ([]float64, *mat.Dense, error) {
	var es mat.EigenSym
	if ok := es.Factorize(a, true); !ok {
		return nil, nil, fmt.Errorf("symmetric eigendecomposition: %w", ErrNotConverged)
	}
	vals := es.Values(nil) // ascending
	var v mat.Dense
	es.VectorsTo(&v)
	n := len(vals)
	outVals := make([]float64, n)
	out := mat.NewDense(n, n, nil)
	for j := 0; j < n; j++ {
		outVals[j] = vals[n-1-j]
		for i := 0; i < n; i++ {
			out.Set(i, j, v.At(i, n-1-j))
		}
	}
	return outVals, out, nil
}

// EigSymTop implements Backend (reference version: full solve, then slice).
func (g Gonum) EigSymTop(a mat.Symmetric, k int) ([]float64, *mat.Dense, error) {
	n := a.SymmetricDim()
	if k < 1 || k > n {
		return nil, nil, fmt.Errorf("top-%d eigenpairs of a %d×%d matrix: %w", k, n, n, ErrShape)
	}
	vals, vecs, err := g.EigSym(a)
	if err != nil {
		return nil, nil, err
	}
	return vals[:k], mat.DenseCopyOf(vecs.Slice(0, n, 0, k)), nil
}

// SVD implements Backend.
func (Gonum) SVD(a mat.Matrix) (*mat.Dense, []float64, *mat.Dense, error) {
	var svd mat.SVD
	if ok := svd.Factorize(a, mat.SVDThin); !ok {
		return nil, nil, nil, fmt.Errorf("thin SVD: %w", ErrNotConverged)
	}
	var u, v mat.Dense
	svd.UTo(&u)
	svd.VTo(&v)
	return &u, svd.Values(nil), &v, nil
}

// SVDTop implements Backend (reference version: thin SVD, then slice).
func (g Gonum) SVDTop(a mat.Matrix, k int) (*mat.Dense, []float64, *mat.Dense, error) {
	m, n := a.Dims()
	if k < 1 || k > min(m, n) {
		return nil, nil, nil, fmt.Errorf("top-%d SVD of a %d×%d matrix: %w", k, m, n, ErrShape)
	}
	u, s, v, err := g.SVD(a)
	if err != nil {
		return nil, nil, nil, err
	}
	return mat.DenseCopyOf(u.Slice(0, m, 0, k)), s[:k], mat.DenseCopyOf(v.Slice(0, n, 0, k)), nil
}

// QR implements Backend.
func (Gonum) QR(a mat.Matrix) (*mat.Dense, *mat.Dense, error) {
	m, n := a.Dims()
	if m < n {
		return nil, nil, fmt.Errorf("thin QR of a %d×%d matrix needs m ≥ n: %w", m, n, ErrShape)
	}
	var qr mat.QR
	qr.Factorize(a)
	var q, r mat.Dense
	qr.QTo(&q)
	qr.RTo(&r)
	return mat.DenseCopyOf(q.Slice(0, m, 0, n)), mat.DenseCopyOf(r.Slice(0, n, 0, n)), nil
}

// SPDSolve implements Backend.
func (Gonum) SPDSolve(a mat.Symmetric, b mat.Matrix) (*mat.Dense, error) {
	var ch mat.Cholesky
	if ok := ch.Factorize(a); !ok {
		return nil, fmt.Errorf("cholesky: matrix is not positive definite")
	}
	var x mat.Dense
	if err := ch.SolveTo(&x, b); err != nil {
		return nil, fmt.Errorf("cholesky solve: %w", err)
	}
	return &x, nil
}
