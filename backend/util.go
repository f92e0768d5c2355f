package backend

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// ErrNotPositiveDefinite is wrapped by SPDSolve when the matrix is not
// (numerically) symmetric positive definite.
var ErrNotPositiveDefinite = errors.New("backend: matrix is not positive definite")

// ErrNonFinite is wrapped by kernels given an input containing NaN or ±Inf.
var ErrNonFinite = errors.New("backend: input contains NaN or Inf")

// catch converts a panic raised inside a kernel (gonum reports misuse by
// panicking) into an error, so no panic crosses the package boundary.
func catch(op string, err *error) {
	if r := recover(); r != nil {
		if e, ok := r.(error); ok {
			*err = fmt.Errorf("%s: %w", op, e)
			return
		}
		*err = fmt.Errorf("%s: %v", op, r)
	}
}

// rawOf returns a BLAS view of a when it is stored densely (possibly
// transposed, reported by trans), and otherwise a dense copy.
func rawOf(a mat.Matrix) (g blas64.General, trans bool) {
	switch t := a.(type) {
	case mat.RawMatrixer:
		return t.RawMatrix(), false
	case mat.Transpose:
		if rm, ok := t.Matrix.(mat.RawMatrixer); ok {
			return rm.RawMatrix(), true
		}
	}
	return mat.DenseCopyOf(a).RawMatrix(), false
}

// symTriangle copies one triangle of the symmetric matrix a into a fresh
// n×n row-major buffer (the other triangle left zero) and reports which
// triangle, in row-major terms, holds the data. Column-major LAPACK sees
// the opposite triangle.
func symTriangle(a mat.Symmetric) ([]float64, blas.Uplo) {
	n := a.SymmetricDim()
	out := make([]float64, n*n)
	if rs, ok := a.(mat.RawSymmetricer); ok {
		r := rs.RawSymmetric()
		for i := 0; i < n; i++ {
			row := r.Data[i*r.Stride : i*r.Stride+n]
			if r.Uplo == blas.Upper {
				copy(out[i*n+i:i*n+n], row[i:])
			} else {
				copy(out[i*n:i*n+i+1], row[:i+1])
			}
		}
		if r.Uplo != blas.Upper {
			return out, blas.Lower
		}
		return out, blas.Upper
	}
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			out[i*n+j] = a.At(i, j)
		}
	}
	return out, blas.Upper
}

// symFull returns the symmetric matrix a expanded into a full n×n
// row-major buffer (both triangles), ready for gemm.
func symFull(a mat.Symmetric) []float64 {
	n := a.SymmetricDim()
	out, uplo := symTriangle(a)
	// Mirror the stored triangle in cache-sized blocks.
	const blk = 32
	for i0 := 0; i0 < n; i0 += blk {
		i1 := min(i0+blk, n)
		for j0 := i0; j0 < n; j0 += blk {
			j1 := min(j0+blk, n)
			for i := i0; i < i1; i++ {
				for j := max(j0, i+1); j < j1; j++ {
					if uplo == blas.Upper {
						out[j*n+i] = out[i*n+j]
					} else {
						out[i*n+j] = out[j*n+i]
					}
				}
			}
		}
	}
	return out
}

// checkFiniteSlice reports whether every element of s is finite.
func allFinite(s []float64) bool {
	for _, v := range s {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// finiteDense reports whether the r×c matrix stored in g is all finite.
func finiteGeneral(g blas64.General) bool {
	for i := 0; i < g.Rows; i++ {
		if !allFinite(g.Data[i*g.Stride : i*g.Stride+g.Cols]) {
			return false
		}
	}
	return true
}

// reverseCols reverses the column order of the row-major rows×cols block
// stored in data with the given stride, in place.
func reverseCols(data []float64, rows, cols, stride int) {
	for i := 0; i < rows; i++ {
		row := data[i*stride : i*stride+cols]
		for l, r := 0, cols-1; l < r; l, r = l+1, r-1 {
			row[l], row[r] = row[r], row[l]
		}
	}
}

func reverse(s []float64) {
	for l, r := 0, len(s)-1; l < r; l, r = l+1, r-1 {
		s[l], s[r] = s[r], s[l]
	}
}

// transposeInto writes the transpose of the r×c row-major block src (stride
// ss) into dst as a c×r row-major block (stride ds).
func transposeInto(dst []float64, ds int, src []float64, ss, r, c int) {
	const blk = 32
	for i0 := 0; i0 < r; i0 += blk {
		i1 := min(i0+blk, r)
		for j0 := 0; j0 < c; j0 += blk {
			j1 := min(j0+blk, c)
			for i := i0; i < i1; i++ {
				for j := j0; j < j1; j++ {
					dst[j*ds+i] = src[i*ss+j]
				}
			}
		}
	}
}

// transposeSquare transposes the n×n row-major matrix in data in place.
func transposeSquare(data []float64, n int) {
	const blk = 32
	for i0 := 0; i0 < n; i0 += blk {
		i1 := min(i0+blk, n)
		for j0 := i0; j0 < n; j0 += blk {
			j1 := min(j0+blk, n)
			for i := i0; i < i1; i++ {
				for j := max(j0, i+1); j < j1; j++ {
					data[i*n+j], data[j*n+i] = data[j*n+i], data[i*n+j]
				}
			}
		}
	}
}

func checkTopK(what string, k, m, n int) error {
	if k < 1 || k > min(m, n) {
		return fmt.Errorf("%s: k = %d outside [1, %d] for a %d×%d matrix: %w", what, k, min(m, n), m, n, ErrShape)
	}
	return nil
}
