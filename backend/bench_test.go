package backend

import (
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	gonumblas "gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/gonum/mat"
)

// benchSizes are the matrix dimensions of the kernel table.
var benchSizes = []int{200, 500, 1000, 2000}

// benchTopK is the number of leading pairs in the truncated benchmarks.
const benchTopK = 10

// benchSpiked is the DP-noised spiked matrix of the truncated benchmarks:
// ten spikes between 5 and 2 plus a symmetric Gaussian noise matrix whose
// spectrum is a flat semicircle on [−1, 1] (the noise a Gaussian-mechanism
// covariance release adds).
func benchSpiked(n int) *mat.SymDense {
	return spikedNoisy(newRNG(uint64(n)), n, linspace(5, 2, benchTopK), 1)
}

// BenchmarkKernels times every kernel of every backend compiled in, at the
// sizes of benchSizes (n×n operands; Gram of a 2n×n matrix; ten right-hand
// sides for SPDSolve; top-10 on benchSpiked for EigSymTop and on a
// low-rank-plus-noise matrix for SVDTop).
func BenchmarkKernels(b *testing.B) {
	type inputs struct {
		sq, tall, rhs, lowRank *mat.Dense
		sym, spd, spiked       *mat.SymDense
	}
	for _, n := range benchSizes {
		// Inputs are built on first use, so filtered runs stay quick.
		in := sync.OnceValue(func() inputs {
			rng := newRNG(uint64(n))
			var in inputs
			in.sq = randDense(rng, n, n)
			in.tall = randDense(rng, 2*n, n)
			in.sym = randSym(rng, n, 1)
			in.spd = mat.NewSymDense(n, nil)
			in.spd.SymOuterK(1, in.tall.T())
			in.rhs = randDense(rng, n, 10)
			in.spiked = benchSpiked(n)
			in.lowRank = withSpectrum(rng, n, n, linspace(5, 2, benchTopK))
			noise := randDense(rng, n, n)
			noise.Scale(0.5/float64(n), noise)
			in.lowRank.Add(in.lowRank, noise)
			return in
		})
		kernels := []struct {
			name string
			run  func(Backend) error
		}{
			{"Gram", func(be Backend) error { be.Gram(1, in().tall); return nil }},
			{"Mul", func(be Backend) error { var c mat.Dense; return be.Mul(&c, in().sq, false, in().sq, true) }},
			{"EigSym", func(be Backend) error { _, _, err := be.EigSym(in().sym); return err }},
			{"EigSymTop", func(be Backend) error { _, _, err := be.EigSymTop(in().spiked, benchTopK); return err }},
			{"SVD", func(be Backend) error { _, _, _, err := be.SVD(in().sq); return err }},
			{"SVDTop", func(be Backend) error { _, _, _, err := be.SVDTop(in().lowRank, benchTopK); return err }},
			{"QR", func(be Backend) error { _, _, err := be.QR(in().tall); return err }},
			{"SPDSolve", func(be Backend) error { _, err := be.SPDSolve(in().spd, in().rhs); return err }},
		}
		for _, k := range kernels {
			for _, be := range backendsUnderTest() {
				b.Run(fmt.Sprintf("%s/%s/n=%d", k.name, be.Name(), n), func(b *testing.B) {
					in()
					defer pureBLAS(be)()
					defer reportCPU(b)()
					for b.Loop() {
						if err := k.run(be); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// reportCPU starts measuring the process CPU time (user + system) and
// returns the function reporting it per operation as "cpu-ns/op". On an
// oversubscribed machine it measures the work where wall time also counts
// the wait for a core (single-threaded BLAS assumed).
func reportCPU(b *testing.B) func() {
	c0 := cpuTime()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64((cpuTime()-c0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}
}

// cpuTime returns the CPU time (user + system) consumed by this process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTopEig compares, on each backend, the top-10 eigenpairs of the
// DP-noised spiked matrix by the block Krylov solver against the full
// solver, and reports the subspace error of the Krylov answer against the
// full one ("sin-theta-e-12", in units of 1e-12).
func BenchmarkTopEig(b *testing.B) {
	for _, n := range []int{1000, 2000} {
		a := benchSpiked(n)
		// The reference for the error metric comes from the default
		// backend's full solver, computed once and only when needed.
		ref := sync.OnceValue(func() mat.Matrix {
			_, full, err := Default().EigSym(a)
			if err != nil {
				b.Fatal(err)
			}
			return full.Slice(0, n, 0, benchTopK)
		})
		for _, be := range backendsUnderTest() {
			b.Run(fmt.Sprintf("%s/krylov/n=%d", be.Name(), n), func(b *testing.B) {
				want := ref()
				defer pureBLAS(be)()
				defer reportCPU(b)()
				var vecs *mat.Dense
				var info TruncInfo
				for b.Loop() {
					var err error
					if _, vecs, info, err = EigSymTopKrylov(be, a, benchTopK, TruncOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				// In units of 1e-12: the benchmark printer rounds tiny values to 0.
				b.ReportMetric(subspaceDist(want, vecs)/1e-12, "sin-theta-e-12")
				b.ReportMetric(float64(info.Iterations), "products")
			})
			b.Run(fmt.Sprintf("%s/full/n=%d", be.Name(), n), func(b *testing.B) {
				defer pureBLAS(be)()
				defer reportCPU(b)()
				for b.Loop() {
					if _, _, err := be.EigSym(a); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkGramTall times the Gram matrix of tall data sets shaped like
// Fashion-MNIST (60000×784) and a wider one (20000×1000) on every backend
// compiled in, next to gonum's own pure-Go dsyrk ("gonum-dsyrk", what the
// gonum backend ran before its blocked kernels).
func BenchmarkGramTall(b *testing.B) {
	for _, s := range []struct{ n, p int }{{60000, 784}, {20000, 1000}} {
		x := sync.OnceValue(func() *mat.Dense { return randDense(newRNG(uint64(s.p)), s.n, s.p) })
		b.Run(fmt.Sprintf("gonum-dsyrk/%dx%d", s.n, s.p), func(b *testing.B) {
			raw := x().RawMatrix()
			defer reportCPU(b)()
			for b.Loop() {
				out := mat.NewSymDense(s.p, nil)
				gonumblas.Implementation{}.Dsyrk(blas.Upper, blas.Trans, s.p, s.n, 1, raw.Data, raw.Stride, 0, out.RawSymmetric().Data, s.p)
			}
		})
		for _, be := range backendsUnderTest() {
			b.Run(fmt.Sprintf("%s/%dx%d", be.Name(), s.n, s.p), func(b *testing.B) {
				x()
				defer pureBLAS(be)()
				defer reportCPU(b)()
				for b.Loop() {
					be.Gram(1, x())
				}
			})
		}
	}
}
