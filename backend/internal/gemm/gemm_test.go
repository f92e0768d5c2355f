package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// operand returns an r×c matrix (as denoted, possibly transposed) stored
// with stride padding pad, filled with values of mixed sign and magnitude.
func operand(rng *rand.Rand, r, c, pad int, trans bool) View {
	sr, sc := r, c
	if trans {
		sr, sc = c, r
	}
	s := sc + pad
	d := make([]float64, max(0, (sr-1)*s+sc))
	for i := range d {
		d[i] = rng.NormFloat64() * math.Exp2(float64(rng.IntN(8)-4))
	}
	return View{Data: d, Stride: s, Trans: trans}
}

func at(v View, i, j int) float64 {
	if v.Trans {
		i, j = j, i
	}
	return v.Data[i*v.Stride+j]
}

// checkProduct compares c1 (after the kernel) against c0 + alpha·A·B by a
// naive triple loop, within the rounding bound of a length-k dot product
// (k·ε·Σ|alpha·a_il·b_lj|, plus the addition to c0). upper: only j ≥ i is
// computed, and the strict lower triangle must be unchanged.
func checkProduct(t *testing.T, m, n, k int, alpha float64, a, b View, c0, c1 []float64, ldc int, upper bool) {
	t.Helper()
	eps := math.Nextafter(1, 2) - 1
	for i := range m {
		for j := range n {
			got := c1[i*ldc+j]
			if upper && j < i {
				if got != c0[i*ldc+j] {
					t.Fatalf("lower element (%d,%d) written", i, j)
				}
				continue
			}
			want, mag := c0[i*ldc+j], math.Abs(c0[i*ldc+j])
			for l := range k {
				p := alpha * at(a, i, l) * at(b, l, j)
				want += p
				mag += math.Abs(p)
			}
			if math.Abs(got-want) > 2*float64(k+2)*eps*mag {
				t.Fatalf("element (%d,%d): got %v want %v", i, j, got, want)
			}
		}
	}
	// Padding between rows of C is never written.
	for i := range m {
		for j := n; j < ldc && i*ldc+j < len(c1); j++ {
			if c0[i*ldc+j] != c1[i*ldc+j] {
				t.Fatalf("padding (%d,%d) written", i, j)
			}
		}
	}
}

type shape struct{ m, n, k int }

var shapes = []shape{
	{1, 1, 1}, {7, 13, 5}, {13, 7, 300}, {1000, 3, 17}, {3, 1000, 17},
	{513, 257, 129}, {6, 8, 256}, {12, 16, 257}, {200, 150, 600}, {1, 40, 1},
}

func eachKernel(t *testing.T, f func(t *testing.T)) {
	for _, asm := range []bool{true, false} {
		if asm && !hasAsm {
			continue
		}
		t.Run(fmt.Sprintf("asm=%v", asm), func(t *testing.T) {
			defer func(old bool) { useAsm = old }(useAsm)
			useAsm = asm
			f(t)
		})
	}
}

func TestGemm(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		for _, s := range shapes {
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					pad := (s.m + s.n + s.k) % 3
					t.Run(fmt.Sprintf("%dx%dx%d/tA=%v/tB=%v/pad=%d", s.m, s.n, s.k, ta, tb, pad), func(t *testing.T) {
						rng := rand.New(rand.NewPCG(uint64(s.m), uint64(s.n*1000+s.k)))
						a := operand(rng, s.m, s.k, pad, ta)
						b := operand(rng, s.k, s.n, pad+1, tb)
						ldc := s.n + pad
						c0 := operand(rng, s.m, s.n, pad, false).Data
						c1 := append([]float64(nil), c0...)
						Gemm(s.m, s.n, s.k, -0.75, a, b, c1, ldc)
						checkProduct(t, s.m, s.n, s.k, -0.75, a, b, c0, c1, ldc, false)
					})
				}
			}
		}
	})
}

func TestSyrk(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		for _, s := range shapes {
			for _, ta := range []bool{false, true} {
				pad := s.k % 3
				t.Run(fmt.Sprintf("%dx%d/t=%v/pad=%d", s.m, s.k, ta, pad), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(s.m), uint64(s.k)))
					a := operand(rng, s.m, s.k, pad, ta)
					ldc := s.m + pad
					c0 := operand(rng, s.m, s.m, pad, false).Data
					c1 := append([]float64(nil), c0...)
					Syrk(s.m, s.k, 2, a, c1, ldc)
					at := View{Data: a.Data, Stride: a.Stride, Trans: !a.Trans}
					checkProduct(t, s.m, s.m, s.k, 2, a, at, c0, c1, ldc, true)
				})
			}
		}
	})
}

// TestKernelsAgree checks the generic micro-kernel against the assembly
// one on a product large enough to run on several goroutines.
func TestKernelsAgree(t *testing.T) {
	if !hasAsm {
		t.Skip("no assembly kernel")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	m, n, k := 300, 260, 700
	a := operand(rng, m, k, 0, true)
	b := operand(rng, k, n, 0, false)
	run := func(asm bool) []float64 {
		defer func(old bool) { useAsm = old }(useAsm)
		useAsm = asm
		c := make([]float64, m*n)
		Gemm(m, n, k, 1, a, b, c, n)
		return c
	}
	ca, cg := run(true), run(false)
	eps := math.Nextafter(1, 2) - 1
	for i := range ca {
		require.InDelta(t, cg[i], ca[i], float64(k)*eps*(1+math.Abs(cg[i]))*64, "element %d", i)
	}
}

// TestSplitInvariant checks that the result does not depend on how many
// goroutines computed it.
func TestSplitInvariant(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n, k := 400, 900
	a := operand(rng, n, k, 1, false)
	one := make([]float64, n*n)
	got := acquire(cap(helpers))
	Syrk(n, k, 1, a, one, n)
	release(got)
	all := make([]float64, n*n)
	Syrk(n, k, 1, a, all, n)
	require.Equal(t, one, all)
}

func TestShortStoragePanics(t *testing.T) {
	require.Panics(t, func() {
		Gemm(2, 2, 2, 1, View{Data: make([]float64, 3), Stride: 2}, View{Data: make([]float64, 4), Stride: 2}, make([]float64, 4), 2)
	})
	require.Panics(t, func() { Syrk(3, 2, 1, View{Data: make([]float64, 6), Stride: 2}, make([]float64, 8), 3) })
}

func BenchmarkGemm(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{256, 1000} {
		x := operand(rng, n, n, 0, false)
		y := operand(rng, n, n, 0, false)
		c := make([]float64, n*n)
		for _, impl := range []string{"asm", "generic", "gonum"} {
			if impl == "asm" && !hasAsm {
				continue
			}
			b.Run(fmt.Sprintf("%s/n=%d", impl, n), func(b *testing.B) {
				defer func(old bool) { useAsm = old }(useAsm)
				useAsm = impl == "asm"
				c0 := cpuTime()
				for b.Loop() {
					if impl == "gonum" {
						gonum.Implementation{}.Dgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, x.Data, n, y.Data, n, 1, c, n)
					} else {
						Gemm(n, n, n, 1, x, y, c, n)
					}
				}
				b.ReportMetric(2*float64(n*n*n)*float64(b.N)/(cpuTime()-c0).Seconds()/1e9, "GFLOP/cpu-s")
			})
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
