// Package backend is dplr's dense linear-algebra layer: the handful of kernels
// the estimators spend their time in (Gram matrices, products, symmetric
// eigendecompositions, thin and truncated SVDs, thin QR and SPD solves),
// behind one interface with two implementations chosen at build time.
//
// The default build uses pure-Go gonum. Building with the "openblas" tag
// routes BLAS through OpenBLAS and the LAPACK hot paths through cgo bindings to
// LAPACKE. Estimator code calls Default() and never needs to know which.
//
// Conventions shared by every implementation:
//   - eigenvalues and singular values are returned in descending order, with
//     the matching vectors in the same column order;
//   - "thin" factors have min(m, n) columns;
//   - inputs are never modified (a read-only memory-mapped *mat.Dense is
//     safe to pass);
//   - inputs containing NaN or ±Inf are rejected with ErrNonFinite, bad
//     shapes with ErrShape, before any work;
//   - truncated solvers either meet their stated tolerance or return an error
//     wrapping ErrNotConverged; they never return a poor subspace silently.
//
// Truncated solvers: EigSymTopKrylov and SVDTopKrylov run a block Krylov
// (thick-restarted block Lanczos) iteration on any Backend's kernels, stop on
// an a posteriori bound of the subspace error (TruncOptions), and report it
// (TruncInfo). The Backend methods EigSymTop and SVDTop use them when k is
// small against the dimension (UseTruncatedEig, UseTruncatedSVD) and otherwise, or when they do
// not converge, an exact solver; so those methods always return the exact
// answer to DefaultTruncTol.
//
// Threads: the OpenBLAS backend honours OPENBLAS_NUM_THREADS and
// SetThreads; Threads reports the count in effect.
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
