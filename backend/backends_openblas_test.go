//go:build openblas

package backend

import (
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"

	"github.com/dplr/dplr/backend/internal/gemm"
)

// backendsUnderTest lists the implementations compiled into this build.
func backendsUnderTest() []Backend { return []Backend{Gonum{}, OpenBLAS{}} }

// pureBLAS makes be's benchmarks run on the BLAS it ships with: the gonum
// backend on the pure-Go BLAS of the default build (gonum's, with dplr's
// blocked level-3 kernels) rather than on the OpenBLAS this build installs
// process-wide. It returns the function restoring OpenBLAS.
func pureBLAS(be Backend) (restore func()) {
	if be.Name() != "gonum" {
		return func() {}
	}
	blas64.Use(gemm.Implementation{})
	return func() { blas64.Use(netlib.Implementation{}) }
}
