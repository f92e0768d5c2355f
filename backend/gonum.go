package backend

import (
	"errors"
	"fmt"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// Gonum is the pure-Go implementation built on gonum's BLAS and LAPACK.
//
// Its BLAS calls go through gonum's blas64 package, whose implementation is
// process-wide: in the default build gonum's pure-Go BLAS with dplr's
// blocked AVX2/FMA products (backend/internal/gemm), in a binary built with
// the "openblas" tag OpenBLAS; the LAPACK algorithms stay gonum's own.
type Gonum struct{}

// Name implements Backend.
func (Gonum) Name() string { return "gonum" }

// Threads implements Backend. Gonum's LAPACK is sequential; its large
// matrix products may use several goroutines.
func (Gonum) Threads() int { return 1 }

// Gram implements Backend with a BLAS syrk on the operand's own storage
// (no copy when a is a *mat.Dense, a view of one, or its transpose).
func (Gonum) Gram(alpha float64, a mat.Matrix) *mat.SymDense {
	return gram(alpha, a)
}

func gram(alpha float64, a mat.Matrix) *mat.SymDense {
	_, c := a.Dims()
	out := mat.NewSymDense(c, nil)
	raw, trans := rawOf(a)
	if trans {
		// a = rawᵀ, so aᵀa = raw·rawᵀ.
		blas64.Syrk(blas.NoTrans, alpha, raw, 0, out.RawSymmetric())
	} else {
		blas64.Syrk(blas.Trans, alpha, raw, 0, out.RawSymmetric())
	}
	return out
}

// Mul implements Backend.
func (Gonum) Mul(dst *mat.Dense, a mat.Matrix, transA bool, b mat.Matrix, transB bool) error {
	return mul(dst, a, transA, b, transB)
}

func mul(dst *mat.Dense, a mat.Matrix, transA bool, b mat.Matrix, transB bool) (err error) {
	defer catch("mul", &err)
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

// EigSym implements Backend with LAPACK dsyev (gonum's implicit QL/QR).
func (Gonum) EigSym(a mat.Symmetric) (vals []float64, vecs *mat.Dense, err error) {
	defer catch("symmetric eigendecomposition", &err)
	n := a.SymmetricDim()
	if n == 0 {
		return nil, nil, fmt.Errorf("symmetric eigendecomposition of an empty matrix: %w", ErrShape)
	}
	buf, uplo := symTriangle(a)
	if !allFinite(buf) {
		return nil, nil, fmt.Errorf("symmetric eigendecomposition: %w", ErrNonFinite)
	}
	s := blas64.Symmetric{N: n, Stride: n, Data: buf, Uplo: uplo}
	w := make([]float64, n)
	work := []float64{0}
	lapack64.Syev(lapack.EVCompute, s, w, work, -1)
	work = make([]float64, int(work[0]))
	if ok := lapack64.Syev(lapack.EVCompute, s, w, work, len(work)); !ok {
		return nil, nil, fmt.Errorf("symmetric eigendecomposition (%d×%d): %w", n, n, ErrNotConverged)
	}
	// dsyev returns ascending order with eigenvectors in the columns of buf.
	reverse(w)
	reverseCols(buf, n, n, n)
	return w, mat.NewDense(n, n, buf), nil
}

// EigSymTop implements Backend: eigSymTop with, as the exact solver, the
// tridiagonal top-k path (eigSymTopTridiag) when k is small against a
// large n, else or when that path does not meet its residual bound the
// full decomposition.
func (g Gonum) EigSymTop(a mat.Symmetric, k int) ([]float64, *mat.Dense, error) {
	return eigSymTop(g, a, k, func() ([]float64, *mat.Dense, error) {
		if n := a.SymmetricDim(); n >= 64 && 8*k <= n {
			vals, vecs, err := eigSymTopTridiag(a, k)
			if !errors.Is(err, ErrNotConverged) {
				return vals, vecs, err
			}
		}
		vals, vecs, err := g.EigSym(a)
		if err != nil {
			return nil, nil, err
		}
		return vals[:k], mat.DenseCopyOf(vecs.Slice(0, a.SymmetricDim(), 0, k)), nil
	})
}

// eigSymTop returns the k largest eigenpairs of a for any backend: by the
// block Krylov solver (EigSymTopKrylov, default options) when k is small
// against the dimension, else, or when that does not converge, by exact;
// so the answer always meets the default tolerance. Signs are canonical.
func eigSymTop(be Backend, a mat.Symmetric, k int, exact func() ([]float64, *mat.Dense, error)) ([]float64, *mat.Dense, error) {
	n := a.SymmetricDim()
	if err := checkTopK("top-k eigenpairs", k, n, n); err != nil {
		return nil, nil, err
	}
	var (
		vals []float64
		vecs *mat.Dense
		err  = ErrNotConverged
	)
	if UseTruncatedEig(be, n, k) {
		vals, vecs, _, err = EigSymTopKrylov(be, a, k, TruncOptions{})
	}
	if errors.Is(err, ErrNotConverged) {
		vals, vecs, err = exact()
	}
	canonicalSigns(vecs)
	return vals, vecs, err
}

// SVD implements Backend with LAPACK dgesvd.
func (Gonum) SVD(a mat.Matrix) (u *mat.Dense, s []float64, v *mat.Dense, err error) {
	defer catch("thin SVD", &err)
	m, n := a.Dims()
	if m == 0 || n == 0 {
		return nil, nil, nil, fmt.Errorf("thin SVD of an empty matrix: %w", ErrShape)
	}
	r := min(m, n)
	work := mat.DenseCopyOf(a)
	raw := work.RawMatrix()
	if !finiteGeneral(raw) {
		return nil, nil, nil, fmt.Errorf("thin SVD: %w", ErrNonFinite)
	}
	u = mat.NewDense(m, r, nil)
	vt := mat.NewDense(r, n, nil)
	s = make([]float64, r)
	wk := []float64{0}
	lapack64.Gesvd(lapack.SVDStore, lapack.SVDStore, raw, u.RawMatrix(), vt.RawMatrix(), s, wk, -1)
	wk = make([]float64, int(wk[0]))
	if ok := lapack64.Gesvd(lapack.SVDStore, lapack.SVDStore, raw, u.RawMatrix(), vt.RawMatrix(), s, wk, len(wk)); !ok {
		return nil, nil, nil, fmt.Errorf("thin SVD (%d×%d): %w", m, n, ErrNotConverged)
	}
	v = mat.NewDense(n, r, nil)
	transposeInto(v.RawMatrix().Data, r, vt.RawMatrix().Data, n, r, n)
	return u, s, v, nil
}

// SVDTop implements Backend. When k is small against min(m, n) it uses the
// block Krylov solver (SVDTopKrylov with default options) and falls back to
// the thin SVD if that does not converge.
func (g Gonum) SVDTop(a mat.Matrix, k int) (*mat.Dense, []float64, *mat.Dense, error) {
	return svdTop(g, a, k)
}

func svdTop(be Backend, a mat.Matrix, k int) (*mat.Dense, []float64, *mat.Dense, error) {
	m, n := a.Dims()
	if err := checkTopK("top-k SVD", k, m, n); err != nil {
		return nil, nil, nil, err
	}
	if UseTruncatedSVD(be, min(m, n), k) {
		u, s, v, _, err := SVDTopKrylov(be, a, k, TruncOptions{})
		if err == nil || !errors.Is(err, ErrNotConverged) {
			return u, s, v, err
		}
	}
	u, s, v, err := be.SVD(a)
	if err != nil {
		return nil, nil, nil, err
	}
	return mat.DenseCopyOf(u.Slice(0, m, 0, k)), s[:k], mat.DenseCopyOf(v.Slice(0, n, 0, k)), nil
}

// QR implements Backend with LAPACK dgeqrf and dorgqr (thin Q formed
// directly, never the full m×m factor).
func (Gonum) QR(a mat.Matrix) (q, r *mat.Dense, err error) {
	defer catch("thin QR", &err)
	m, n := a.Dims()
	if m < n || n == 0 {
		return nil, nil, fmt.Errorf("thin QR of a %d×%d matrix needs m ≥ n ≥ 1: %w", m, n, ErrShape)
	}
	q = mat.DenseCopyOf(a)
	raw := q.RawMatrix()
	if !finiteGeneral(raw) {
		return nil, nil, fmt.Errorf("thin QR: %w", ErrNonFinite)
	}
	tau := make([]float64, n)
	w := []float64{0}
	lapack64.Geqrf(raw, tau, w, -1)
	lw := int(w[0])
	lapack64.Orgqr(raw, tau, w, -1)
	lw = max(lw, int(w[0]), n)
	work := make([]float64, lw)
	lapack64.Geqrf(raw, tau, work, lw)
	r = mat.NewDense(n, n, nil)
	rd := r.RawMatrix().Data
	for i := 0; i < n; i++ {
		copy(rd[i*n+i:i*n+n], raw.Data[i*raw.Stride+i:i*raw.Stride+n])
	}
	lapack64.Orgqr(raw, tau, work, lw)
	return q, r, nil
}

// SPDSolve implements Backend by Cholesky factorisation (dpotrf, dpotrs).
func (Gonum) SPDSolve(a mat.Symmetric, b mat.Matrix) (x *mat.Dense, err error) {
	defer catch("SPD solve", &err)
	n := a.SymmetricDim()
	br, bc := b.Dims()
	if br != n || n == 0 {
		return nil, fmt.Errorf("SPD solve with a %d×%d matrix and a %d×%d right-hand side: %w", n, n, br, bc, ErrShape)
	}
	buf, uplo := symTriangle(a)
	if !allFinite(buf) {
		return nil, fmt.Errorf("SPD solve: %w", ErrNonFinite)
	}
	t, ok := lapack64.Potrf(blas64.Symmetric{N: n, Stride: n, Data: buf, Uplo: uplo})
	if !ok {
		return nil, fmt.Errorf("SPD solve (%d×%d): %w", n, n, ErrNotPositiveDefinite)
	}
	x = mat.DenseCopyOf(b)
	if !finiteGeneral(x.RawMatrix()) {
		return nil, fmt.Errorf("SPD solve right-hand side: %w", ErrNonFinite)
	}
	lapack64.Potrs(t, x.RawMatrix())
	return x, nil
}
