// Package backend is dplr's dense linear-algebra layer: the kernels the
// estimators spend their time in (Gram matrices, products, symmetric
// eigendecompositions, thin and truncated SVDs, thin QR, SPD solves) behind
// one interface, implemented by pure-Go gonum by default and by OpenBLAS and
// LAPACKE with the "openblas" build tag; estimator code calls Default().
// OPENBLAS_NUM_THREADS and SetThreads set the OpenBLAS thread count. The
// conventions every implementation keeps (descending order, inputs never
// modified, ErrNonFinite/ErrShape before any work, ErrNotConverged rather
// than a poor subspace) and the block Krylov solvers' stopping rule are in
// docs/benchmarks.md ("Inside backend").
package backend

import (
	"errors"

	"gonum.org/v1/gonum/mat"
)

// ErrNotConverged is wrapped by truncated solvers that did not reach their
// tolerance within their iteration limit.
var ErrNotConverged = errors.New("backend: solver did not converge")

// ErrShape is wrapped by every kernel given operands of incompatible shapes.
var ErrShape = errors.New("backend: incompatible shapes")

// Backend is the set of dense kernels dplr's estimators use.
type Backend interface {
	// Name is "gonum" or "openblas".
	Name() string
	// Threads reports the number of threads the implementation may use.
	Threads() int

	// Gram returns alpha·aᵀa as a symmetric matrix (syrk on a's own
	// storage when a is dense, a view of a dense matrix or its transpose;
	// a must have at least one column).
	Gram(alpha float64, a mat.Matrix) *mat.SymDense
	// Mul sets dst = op(a)·op(b), where op transposes when the flag is set.
	// dst must be sized correctly or be empty (then it is allocated).
	Mul(dst *mat.Dense, a mat.Matrix, transA bool, b mat.Matrix, transB bool) error

	// EigSym returns all eigenvalues (descending) and eigenvectors (columns)
	// of the symmetric matrix a.
	EigSym(a mat.Symmetric) (vals []float64, vecs *mat.Dense, err error)
	// EigSymTop returns the k largest algebraic eigenvalues (descending) and
	// their eigenvectors (p×k), within DefaultTruncTol of the exact top-k
	// subspace (in ‖sin Θ‖_F) when the gap after the k-th eigenvalue is not
	// degenerate.
	EigSymTop(a mat.Symmetric, k int) (vals []float64, vecs *mat.Dense, err error)

	// SVD returns the thin SVD a = U·diag(s)·Vᵀ.
	SVD(a mat.Matrix) (u *mat.Dense, s []float64, v *mat.Dense, err error)
	// SVDTop returns the leading k singular triplets, within
	// DefaultTruncTol of the exact singular subspaces like EigSymTop.
	SVDTop(a mat.Matrix, k int) (u *mat.Dense, s []float64, v *mat.Dense, err error)

	// QR returns the thin QR factorisation a = Q·R with Q m×n orthonormal
	// columns and R n×n upper triangular (requires m ≥ n).
	QR(a mat.Matrix) (q, r *mat.Dense, err error)
	// SPDSolve solves a·x = b for symmetric positive-definite a by Cholesky
	// (ErrNotPositiveDefinite otherwise).
	SPDSolve(a mat.Symmetric, b mat.Matrix) (*mat.Dense, error)
}
