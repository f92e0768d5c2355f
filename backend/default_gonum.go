//go:build !openblas

package backend

import (
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/dplr/dplr/backend/internal/gemm"
)

// In the default build every BLAS call made through gonum's blas64 package
// (gonum/mat products and gonum's LAPACK included) runs on gonum's pure-Go
// BLAS with its hot level-3 routines replaced by dplr's blocked
// AVX2/FMA kernels (backend/internal/gemm).
func init() { blas64.Use(gemm.Implementation{}) }

// Default returns the backend this binary was built with: pure-Go gonum
// (build with -tags openblas for the OpenBLAS/LAPACKE backend).
func Default() Backend { return Gonum{} }

// SetThreads sets the number of threads the default backend may use and
// returns the number now in effect; the gonum backend ignores it (1).
func SetThreads(n int) int { return Gonum{}.Threads() }
