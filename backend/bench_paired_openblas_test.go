//go:build openblas

package backend

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/dplr/dplr/backend/internal/lapacke"
)

// pairedRun times two implementations of the same job alternately (their
// order swapped every round, so a load spike on a shared machine hits both)
// and reports the median wall and CPU time of each and the medians of the
// per-round ratios test/base. On an oversubscribed machine the CPU-time
// figures (single-threaded OpenBLAS) measure the work; wall time also
// measures the wait for a core.
func pairedRun(b *testing.B, base, test func() error, setBase, setTest func() func()) {
	b.Helper()
	var wb, wt, cb, ct, wr, cr []float64
	timeOne := func(f func() error, set func() func()) (wall, cpu float64) {
		restore := set()
		defer restore()
		c0, t0 := cpuTime(), time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		return float64(time.Since(t0).Nanoseconds()), float64((cpuTime() - c0).Nanoseconds())
	}
	round := 0
	for b.Loop() {
		var xw, xc, yw, yc float64
		if round%2 == 0 {
			xw, xc = timeOne(base, setBase)
			yw, yc = timeOne(test, setTest)
		} else {
			yw, yc = timeOne(test, setTest)
			xw, xc = timeOne(base, setBase)
		}
		round++
		wb, wt, cb, ct = append(wb, xw), append(wt, yw), append(cb, xc), append(ct, yc)
		wr, cr = append(wr, yw/xw), append(cr, yc/max(xc, 1))
	}
	med := func(v []float64) float64 {
		slices.Sort(v)
		return v[len(v)/2]
	}
	b.ReportMetric(med(wb)/1e6, "base-ms")
	b.ReportMetric(med(wt)/1e6, "test-ms")
	b.ReportMetric(med(cb)/1e6, "base-cpu-ms")
	b.ReportMetric(med(ct)/1e6, "test-cpu-ms")
	b.ReportMetric(med(wr), "test/base")
	b.ReportMetric(med(cr), "cpu-test/base")
}

func noSet() func() { return func() {} }

// BenchmarkPaired measures the performance goals as paired ratios:
//
//	overhead/<routine>: OpenBLAS backend (test) against the raw LAPACKE call
//	  of the same routine (base), goal ≤ 1.1;
//	speedup/<kernel>: gonum backend on pure-Go BLAS (test) against the
//	  OpenBLAS backend (base), goal ≥ 5;
//	topk/<backend>: full eigensolver (test) against the block Krylov top-10
//	  solver (base) on the DP-noised spiked matrix, goal ≥ 5.
func BenchmarkPaired(b *testing.B) {
	ob, gn := OpenBLAS{}, Gonum{}
	gonumSet := func() func() { return pureBLAS(gn) }
	for _, n := range []int{500, 1000} {
		rng := newRNG(uint64(n))
		sym := randSym(rng, n, 1)
		symCol := symFull(sym)
		sq := randDense(rng, n, n)
		tall := randDense(rng, 2*n, n)
		work := make([]float64, 2*n*n)
		w := make([]float64, n)
		z := make([]float64, n*n)
		u := make([]float64, n*n)
		tau := make([]float64, n)
		// The raw calls get column-major copies prepared once, as the
		// fastest possible caller would.
		sqCol := make([]float64, n*n)
		transposeInto(sqCol, n, sq.RawMatrix().Data, n, n, n)
		tallCol := make([]float64, 2*n*n)
		transposeInto(tallCol, 2*n, tall.RawMatrix().Data, n, 2*n, n)
		b.Run(fmt.Sprintf("overhead/dsyevd/n=%d", n), func(b *testing.B) {
			pairedRun(b, func() error {
				copy(work, symCol)
				_, err := lapacke.Dsyevd(true, 'U', n, work, n, w)
				return err
			}, func() error { _, _, err := ob.EigSym(sym); return err }, noSet, noSet)
		})
		b.Run(fmt.Sprintf("overhead/dgesdd/n=%d", n), func(b *testing.B) {
			pairedRun(b, func() error {
				copy(work, sqCol)
				_, err := lapacke.Dgesdd(n, n, work, n, w, u, n, z, n)
				return err
			}, func() error { _, _, _, err := ob.SVD(sq); return err }, noSet, noSet)
		})
		b.Run(fmt.Sprintf("overhead/dgeqrf+dorgqr/n=%d", n), func(b *testing.B) {
			pairedRun(b, func() error {
				copy(work, tallCol)
				if err := lapacke.Dgeqrf(2*n, n, work, 2*n, tau); err != nil {
					return err
				}
				return lapacke.Dorgqr(2*n, n, n, work, 2*n, tau)
			}, func() error { _, _, err := ob.QR(tall); return err }, noSet, noSet)
		})
		b.Run(fmt.Sprintf("overhead/dsyevr-top10/n=%d", n), func(b *testing.B) {
			pairedRun(b, func() error {
				copy(work, symCol)
				_, _, err := lapacke.DsyevrIndex('U', n, work, n, n-benchTopK+1, n, w, z, n)
				return err
			}, func() error { _, _, err := ob.EigSymRange(sym, benchTopK); return err }, noSet, noSet)
		})
		b.Run(fmt.Sprintf("speedup/EigSym/n=%d", n), func(b *testing.B) {
			pairedRun(b, func() error { _, _, err := ob.EigSym(sym); return err },
				func() error { _, _, err := gn.EigSym(sym); return err }, noSet, gonumSet)
		})
		b.Run(fmt.Sprintf("speedup/SVD/n=%d", n), func(b *testing.B) {
			pairedRun(b, func() error { _, _, _, err := ob.SVD(sq); return err },
				func() error { _, _, _, err := gn.SVD(sq); return err }, noSet, gonumSet)
		})
	}
	for _, n := range []int{1000, 2000} {
		a := benchSpiked(n)
		for _, be := range []Backend{ob, gn} {
			set := noSet
			if be.Name() == "gonum" {
				set = gonumSet
			}
			b.Run(fmt.Sprintf("topk/%s/n=%d", be.Name(), n), func(b *testing.B) {
				pairedRun(b, func() error { _, _, _, err := EigSymTopKrylov(be, a, benchTopK, TruncOptions{}); return err },
					func() error { _, _, err := be.EigSym(a); return err }, set, set)
			})
		}
	}
}
