//go:build openblas

package backend

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/netlib/blas/netlib"

	"github.com/dplr/dplr/backend/internal/lapacke"
)

// In an openblas build every BLAS call made through gonum's blas64 package
// (gonum/mat products included) runs on OpenBLAS.
func init() { blas64.Use(netlib.Implementation{}) }

// OpenBLAS is the implementation built with the "openblas" tag: BLAS through
// OpenBLAS (via gonum's netlib binding) and LAPACK through dplr's own cgo
// bindings to LAPACKE (dsyevd, dsyevr, dgesdd, dgeqrf/dorgqr, dposv).
//
// Matrices cross to LAPACK in column-major order: the stored triangle of a
// symmetric row-major matrix is the opposite triangle of its column-major
// image, a general matrix arrives transposed, and each method transposes
// (at O(size) cost, in place where the shape allows) exactly where it must.
type OpenBLAS struct{}

// Name implements Backend.
func (OpenBLAS) Name() string { return "openblas" }

// Threads implements Backend: the number of threads OpenBLAS may use
// (OPENBLAS_NUM_THREADS when set, else one: threads_openblas.go). It waits
// for a large call that raised the count to restore it, so that a caller
// saving and restoring the count never saves the raised one.
func (OpenBLAS) Threads() int {
	threadMu.Lock()
	defer threadMu.Unlock()
	return lapacke.Threads()
}

// SetThreads sets the number of threads OpenBLAS may use (at least 1).
func (OpenBLAS) SetThreads(n int) {
	threadMu.Lock()
	defer threadMu.Unlock()
	lapacke.SetThreads(n)
}

// Gram implements Backend with OpenBLAS dsyrk on the operand's storage.
func (OpenBLAS) Gram(alpha float64, a mat.Matrix) *mat.SymDense { return gram(alpha, a) }

// Mul implements Backend with OpenBLAS dgemm.
func (OpenBLAS) Mul(dst *mat.Dense, a mat.Matrix, transA bool, b mat.Matrix, transB bool) error {
	return mul(dst, a, transA, b, transB)
}

func checkLapackDim(op string, dims ...int) error {
	for _, d := range dims {
		if d > math.MaxInt32 {
			return fmt.Errorf("%s: dimension %d exceeds LAPACK's 32-bit integers: %w", op, d, ErrShape)
		}
	}
	return nil
}

// EigSym implements Backend with LAPACKE dsyevd (divide and conquer).
func (OpenBLAS) EigSym(a mat.Symmetric) ([]float64, *mat.Dense, error) {
	n := a.SymmetricDim()
	if n == 0 {
		return nil, nil, fmt.Errorf("symmetric eigendecomposition of an empty matrix: %w", ErrShape)
	}
	if err := checkLapackDim("symmetric eigendecomposition", n*n); err != nil {
		return nil, nil, err
	}
	buf, uplo := symTriangle(a)
	if !allFinite(buf) {
		return nil, nil, fmt.Errorf("symmetric eigendecomposition: %w", ErrNonFinite)
	}
	w := make([]float64, n)
	var (
		info int
		err  error
	)
	threaded(9*float64(n)*float64(n)*float64(n), func() { info, err = lapacke.Dsyevd(true, colMajorUplo(uplo), n, buf, n, w) })
	if err != nil {
		return nil, nil, fmt.Errorf("symmetric eigendecomposition: %w", err)
	}
	if info > 0 {
		return nil, nil, fmt.Errorf("symmetric eigendecomposition (%d×%d): dsyevd info %d: %w", n, n, info, ErrNotConverged)
	}
	// buf holds the eigenvectors as columns in column-major order, i.e. as
	// rows in Go's order; transpose and put them in descending order.
	transposeSquare(buf, n)
	reverseCols(buf, n, n, n)
	reverse(w)
	return w, mat.NewDense(n, n, buf), nil
}

// EigSymTop implements Backend: eigSymTop with LAPACKE dsyevr restricted
// to the k largest eigenvalues (EigSymRange) as the exact solver.
func (o OpenBLAS) EigSymTop(a mat.Symmetric, k int) ([]float64, *mat.Dense, error) {
	return eigSymTop(o, a, k, func() ([]float64, *mat.Dense, error) { return o.EigSymRange(a, k) })
}

// EigSymRange returns the k largest eigenpairs of a (descending) with
// LAPACKE dsyevr over the eigenvalue index range n−k+1..n: exact like the
// full solver, with the back-transformation limited to k vectors.
func (OpenBLAS) EigSymRange(a mat.Symmetric, k int) ([]float64, *mat.Dense, error) {
	n := a.SymmetricDim()
	if err := checkTopK("top-k eigenpairs", k, n, n); err != nil {
		return nil, nil, err
	}
	if err := checkLapackDim("top-k eigenpairs", n*n); err != nil {
		return nil, nil, err
	}
	buf, uplo := symTriangle(a)
	if !allFinite(buf) {
		return nil, nil, fmt.Errorf("top-k eigenpairs: %w", ErrNonFinite)
	}
	w := make([]float64, n)
	z := make([]float64, n*k)
	var (
		got, info int
		err       error
	)
	threaded(4*float64(n)*float64(n)*float64(n)/3, func() { got, info, err = lapacke.DsyevrIndex(colMajorUplo(uplo), n, buf, n, n-k+1, n, w, z, n) })
	if err != nil {
		return nil, nil, fmt.Errorf("top-%d eigenpairs: %w", k, err)
	}
	if info > 0 || got != k {
		return nil, nil, fmt.Errorf("top-%d eigenpairs (%d×%d): dsyevr info %d, %d values: %w", k, n, n, info, got, ErrNotConverged)
	}
	out := make([]float64, n*k)
	transposeInto(out, k, z, n, k, n)
	reverseCols(out, n, k, k)
	vals := w[:k]
	reverse(vals)
	return vals, mat.NewDense(n, k, out), nil
}

// SVD implements Backend with LAPACKE dgesdd (divide and conquer). The
// row-major m×n input is handed over as the column-major n×m matrix Aᵀ,
// whose right factor is then exactly U in Go's order.
func (OpenBLAS) SVD(a mat.Matrix) (*mat.Dense, []float64, *mat.Dense, error) {
	m, n := a.Dims()
	if m == 0 || n == 0 {
		return nil, nil, nil, fmt.Errorf("thin SVD of an empty matrix: %w", ErrShape)
	}
	if err := checkLapackDim("thin SVD", m*n); err != nil {
		return nil, nil, nil, err
	}
	r := min(m, n)
	buf := mat.DenseCopyOf(a).RawMatrix().Data // contiguous, stride n
	if !allFinite(buf) {
		return nil, nil, nil, fmt.Errorf("thin SVD: %w", ErrNonFinite)
	}
	s := make([]float64, r)
	uu := make([]float64, n*r) // left vectors of Aᵀ = right vectors of A
	vt := make([]float64, r*m) // right vectors of Aᵀ, transposed = U of A
	var (
		info int
		err  error
	)
	threaded(4*float64(m)*float64(n)*float64(min(m, n)), func() { info, err = lapacke.Dgesdd(n, m, buf, n, s, uu, n, vt, r) })
	if err != nil {
		return nil, nil, nil, fmt.Errorf("thin SVD: %w", err)
	}
	if info > 0 {
		return nil, nil, nil, fmt.Errorf("thin SVD (%d×%d): dgesdd info %d: %w", m, n, info, ErrNotConverged)
	}
	v := uu
	if r == n {
		transposeSquare(v, n)
	} else {
		v = make([]float64, n*r)
		transposeInto(v, r, uu, n, r, n)
	}
	return mat.NewDense(m, r, vt), s, mat.NewDense(n, r, v), nil
}

// SVDTop implements Backend: the block Krylov solver (SVDTopKrylov) when k
// is small against min(m, n), else or on non-convergence the thin SVD.
func (o OpenBLAS) SVDTop(a mat.Matrix, k int) (*mat.Dense, []float64, *mat.Dense, error) {
	return svdTop(o, a, k)
}

// QR implements Backend with LAPACKE dgeqrf and dorgqr on a column-major
// copy.
func (OpenBLAS) QR(a mat.Matrix) (*mat.Dense, *mat.Dense, error) {
	m, n := a.Dims()
	if m < n || n == 0 {
		return nil, nil, fmt.Errorf("thin QR of a %d×%d matrix needs m ≥ n ≥ 1: %w", m, n, ErrShape)
	}
	if err := checkLapackDim("thin QR", m*n); err != nil {
		return nil, nil, err
	}
	col := colMajor(a, m, n)
	if !allFinite(col) {
		return nil, nil, fmt.Errorf("thin QR: %w", ErrNonFinite)
	}
	tau := make([]float64, n)
	if err := lapacke.Dgeqrf(m, n, col, m, tau); err != nil {
		return nil, nil, fmt.Errorf("thin QR: %w", err)
	}
	r := make([]float64, n*n)
	for j := 0; j < n; j++ {
		for i := 0; i <= j; i++ {
			r[i*n+j] = col[j*m+i]
		}
	}
	if err := lapacke.Dorgqr(m, n, n, col, m, tau); err != nil {
		return nil, nil, fmt.Errorf("thin QR: %w", err)
	}
	q := make([]float64, m*n)
	transposeInto(q, n, col, m, n, m)
	return mat.NewDense(m, n, q), mat.NewDense(n, n, r), nil
}

// colMajor returns a fresh column-major copy of the m×n matrix a.
func colMajor(a mat.Matrix, m, n int) []float64 {
	raw, trans := rawOf(a)
	col := make([]float64, m*n)
	if trans {
		// a = rawᵀ: raw (n×m row-major) is a's column-major image.
		for i := 0; i < n; i++ {
			copy(col[i*m:i*m+m], raw.Data[i*raw.Stride:i*raw.Stride+m])
		}
	} else {
		transposeInto(col, m, raw.Data, raw.Stride, m, n)
	}
	return col
}

// SPDSolve implements Backend with LAPACKE dposv (Cholesky).
func (OpenBLAS) SPDSolve(a mat.Symmetric, b mat.Matrix) (*mat.Dense, error) {
	n := a.SymmetricDim()
	br, nrhs := b.Dims()
	if br != n || n == 0 || nrhs == 0 {
		return nil, fmt.Errorf("SPD solve with a %d×%d matrix and a %d×%d right-hand side: %w", n, n, br, nrhs, ErrShape)
	}
	if err := checkLapackDim("SPD solve", n*n, n*nrhs); err != nil {
		return nil, err
	}
	buf, uplo := symTriangle(a)
	if !allFinite(buf) {
		return nil, fmt.Errorf("SPD solve: %w", ErrNonFinite)
	}
	col := colMajor(b, n, nrhs)
	if !allFinite(col) {
		return nil, fmt.Errorf("SPD solve right-hand side: %w", ErrNonFinite)
	}
	info, err := lapacke.Dposv(colMajorUplo(uplo), n, nrhs, buf, n, col, n)
	if err != nil {
		return nil, fmt.Errorf("SPD solve: %w", err)
	}
	if info > 0 {
		return nil, fmt.Errorf("SPD solve (%d×%d): leading minor %d: %w", n, n, info, ErrNotPositiveDefinite)
	}
	x := make([]float64, n*nrhs)
	transposeInto(x, nrhs, col, n, nrhs, n)
	return mat.NewDense(n, nrhs, x), nil
}

// colMajorUplo is the LAPACK uplo character of a row-major triangle.
func colMajorUplo(u blas.Uplo) byte {
	if u == blas.Upper {
		return 'L'
	}
	return 'U'
}
