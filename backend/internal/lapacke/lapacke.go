//go:build openblas

package lapacke

/*
#cgo LDFLAGS: -llapacke -lopenblas -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <lapacke.h>

void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);

// stop_pool ends a threaded OpenBLAS's worker threads (see StopPool).
static void stop_pool(void) {
	int (*stop)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "blas_thread_shutdown_");
	if (stop) stop();
}

// pool_running: 1 with worker threads, 0 without, -1 without a pool.
static int pool_running(void) {
	int *avail = (int *)dlsym(RTLD_DEFAULT, "blas_server_avail");
	return avail ? *avail : -1;
}
*/
import "C"

import (
	"fmt"
)

// Threads returns the number of threads OpenBLAS may use.
func Threads() int { return int(C.openblas_get_num_threads()) }

// SetThreads sets the number of threads OpenBLAS may use (n ≥ 1).
func SetThreads(n int) {
	if n < 1 {
		n = 1
	}
	C.openblas_set_num_threads(C.int(n))
}

// StopPool ends OpenBLAS's idle worker threads, which spin on a core for
// a while after the library loads and after each threaded call before
// they sleep. The next threaded call starts them again. It must not run
// beside another OpenBLAS call.
func StopPool() { C.stop_pool() }

// Pool reports whether OpenBLAS's worker threads exist (running) and
// whether this OpenBLAS has such a pool at all (ok).
func Pool() (running, ok bool) {
	r := C.pool_running()
	return r > 0, r >= 0
}

func ptr(s []float64) *C.double {
	if len(s) == 0 {
		return nil
	}
	return (*C.double)(&s[0])
}

func check(name string, info C.lapack_int) (int, error) {
	if info < 0 {
		return 0, fmt.Errorf("lapacke: %s: illegal value of argument %d", name, -info)
	}
	return int(info), nil
}

// Dsyevd computes all eigenvalues (ascending, into w) and, if vectors is set,
// the eigenvectors (overwriting a, one per column) of the n×n symmetric
// column-major matrix a whose uplo ('U' or 'L') triangle is referenced.
func Dsyevd(vectors bool, uplo byte, n int, a []float64, lda int, w []float64) (int, error) {
	jobz := C.char('N')
	if vectors {
		jobz = 'V'
	}
	info := C.LAPACKE_dsyevd(C.LAPACK_COL_MAJOR, jobz, C.char(uplo), C.lapack_int(n),
		ptr(a), C.lapack_int(lda), ptr(w))
	return check("dsyevd", info)
}

// DsyevrIndex computes the eigenvalues with (1-based, ascending) indices
// il..iu of the n×n symmetric column-major matrix a (destroyed), into w, and
// their eigenvectors into the columns of z (n×(iu-il+1), leading dimension
// ldz). It returns the number of eigenvalues found.
func DsyevrIndex(uplo byte, n int, a []float64, lda int, il, iu int, w, z []float64, ldz int) (int, int, error) {
	var m C.lapack_int
	isuppz := make([]C.lapack_int, 2*max(1, iu-il+1))
	info := C.LAPACKE_dsyevr(C.LAPACK_COL_MAJOR, 'V', 'I', C.char(uplo), C.lapack_int(n),
		ptr(a), C.lapack_int(lda), 0, 0, C.lapack_int(il), C.lapack_int(iu), 0,
		&m, ptr(w), ptr(z), C.lapack_int(ldz), &isuppz[0])
	pos, err := check("dsyevr", info)
	return int(m), pos, err
}

// Dgesdd computes the thin SVD (jobz 'S') of the m×n column-major matrix a
// (destroyed): singular values (descending) into s, the min(m,n) left vectors
// into u (m×min, ldu) and the right vectors transposed into vt (min×n, ldvt).
func Dgesdd(m, n int, a []float64, lda int, s, u []float64, ldu int, vt []float64, ldvt int) (int, error) {
	info := C.LAPACKE_dgesdd(C.LAPACK_COL_MAJOR, 'S', C.lapack_int(m), C.lapack_int(n),
		ptr(a), C.lapack_int(lda), ptr(s), ptr(u), C.lapack_int(ldu), ptr(vt), C.lapack_int(ldvt))
	return check("dgesdd", info)
}

// Dgeqrf computes the QR factorisation of the m×n column-major matrix a in
// place (R in the upper triangle, reflectors below it, scalars in tau).
func Dgeqrf(m, n int, a []float64, lda int, tau []float64) error {
	info := C.LAPACKE_dgeqrf(C.LAPACK_COL_MAJOR, C.lapack_int(m), C.lapack_int(n),
		ptr(a), C.lapack_int(lda), ptr(tau))
	_, err := check("dgeqrf", info)
	return err
}

// Dorgqr overwrites the output of Dgeqrf with the first n columns of Q
// (m×n, built from k reflectors).
func Dorgqr(m, n, k int, a []float64, lda int, tau []float64) error {
	info := C.LAPACKE_dorgqr(C.LAPACK_COL_MAJOR, C.lapack_int(m), C.lapack_int(n),
		C.lapack_int(k), ptr(a), C.lapack_int(lda), ptr(tau))
	_, err := check("dorgqr", info)
	return err
}

// Dposv solves a·x = b for the n×n symmetric positive-definite column-major
// a (overwritten by its Cholesky factor) and n×nrhs column-major b
// (overwritten by x). A positive return is the order of the leading minor
// that is not positive definite.
func Dposv(uplo byte, n, nrhs int, a []float64, lda int, b []float64, ldb int) (int, error) {
	info := C.LAPACKE_dposv(C.LAPACK_COL_MAJOR, C.char(uplo), C.lapack_int(n), C.lapack_int(nrhs),
		ptr(a), C.lapack_int(lda), ptr(b), C.lapack_int(ldb))
	return check("dposv", info)
}
