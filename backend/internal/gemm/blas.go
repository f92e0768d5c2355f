package gemm

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// Implementation is gonum's pure-Go BLAS with the level-3 routines that
// products and gonum's LAPACK spend their time in (Dgemm, and Dsyrk and
// Dsyr2k on the upper triangle) run on this package's blocked kernels.
// Calls it does not handle itself (the lower triangle, empty or invalid
// arguments) go to gonum's routine, which also raises gonum's panics; so
// does every call where the assembly micro-kernel cannot run, since gonum's
// vectorised routines beat the generic Go kernel (by about 3.5× at
// n = 256).
type Implementation struct{ gonum.Implementation }

var _ blas.Float64 = Implementation{}

// Dgemm computes C = alpha·op(A)·op(B) + beta·C (row-major, as gonum).
func (im Implementation) Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	ta, okA := isTrans(tA)
	tb, okB := isTrans(tB)
	if !useAsm || !okA || !okB || m <= 0 || n <= 0 || k <= 0 || alpha == 0 ||
		!fits(a, lda, m, k, ta) || !fits(b, ldb, k, n, tb) || !fits(c, ldc, m, n, false) {
		im.Implementation.Dgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	scale(beta, c, ldc, m, n, false)
	Gemm(m, n, k, alpha, View{Data: a, Stride: lda, Trans: ta}, View{Data: b, Stride: ldb, Trans: tb}, c, ldc)
}

// Dsyrk computes C = alpha·A·Aᵀ + beta·C (t = NoTrans, A n×k) or
// C = alpha·Aᵀ·A + beta·C (A k×n) on the ul triangle of C.
func (im Implementation) Dsyrk(ul blas.Uplo, t blas.Transpose, n, k int, alpha float64, a []float64, lda int, beta float64, c []float64, ldc int) {
	ta, ok := isTrans(t)
	if !useAsm || !ok || ul != blas.Upper || n <= 0 || k <= 0 || alpha == 0 ||
		!fits(a, lda, n, k, ta) || !fits(c, ldc, n, n, false) {
		im.Implementation.Dsyrk(ul, t, n, k, alpha, a, lda, beta, c, ldc)
		return
	}
	scale(beta, c, ldc, n, n, true)
	Syrk(n, k, alpha, View{Data: a, Stride: lda, Trans: ta}, c, ldc)
}

// Dsyr2k computes C = alpha·(A·Bᵀ + B·Aᵀ) + beta·C (t = NoTrans, A and
// B n×k) or C = alpha·(Aᵀ·B + Bᵀ·A) + beta·C (k×n) on the ul triangle.
func (im Implementation) Dsyr2k(ul blas.Uplo, t blas.Transpose, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	ta, ok := isTrans(t)
	if !useAsm || !ok || ul != blas.Upper || n <= 0 || k <= 0 || alpha == 0 ||
		!fits(a, lda, n, k, ta) || !fits(b, ldb, n, k, ta) || !fits(c, ldc, n, n, false) {
		im.Implementation.Dsyr2k(ul, t, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	scale(beta, c, ldc, n, n, true)
	Syr2k(n, k, alpha, View{Data: a, Stride: lda, Trans: ta}, View{Data: b, Stride: ldb, Trans: ta}, c, ldc)
}

func isTrans(t blas.Transpose) (trans, ok bool) {
	switch t {
	case blas.NoTrans:
		return false, true
	case blas.Trans, blas.ConjTrans:
		return true, true
	}
	return false, false
}

// fits reports whether s with leading dimension ld holds the r×c matrix
// it denotes (stored c×r when trans).
func fits(s []float64, ld, r, c int, trans bool) bool {
	if trans {
		r, c = c, r
	}
	return ld >= c && len(s) >= (r-1)*ld+c
}

// scale multiplies the m×n matrix c (only its upper triangle when upper)
// by beta; beta = 0 sets it to zero, NaNs included, as BLAS does.
func scale(beta float64, c []float64, ldc, m, n int, upper bool) {
	if beta == 1 {
		return
	}
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		if upper {
			row = row[i:]
		}
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}
