package rgrad

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/sdk"
)

// Benchmarks (not run by `go test` without -bench):
//
//	go test -run '^$' -bench 'Fit|Pass' -benchtime 5x -count 5 ./plugins/rgrad/
//
// Data generation is excluded from the timings; data sets are cached per
// size, so run one size at a time for the largest ones (≈1.2 GB each).

var benchData = struct {
	sync.Mutex
	m map[string]*gen.Generated
}{m: map[string]*gen.Generated{}}

func benchGen(b *testing.B, n, d1, d2 int) *gen.Generated {
	b.Helper()
	key := fmt.Sprintf("%d/%d/%d", n, d1, d2)
	benchData.Lock()
	defer benchData.Unlock()
	if g, ok := benchData.m[key]; ok {
		return g
	}
	// Keep at most one large data set alive.
	for k := range benchData.m {
		delete(benchData.m, k)
	}
	g := genTrace(b, 1, map[string]string{"n": itoa(n), "d1": itoa(d1), "d2": itoa(d2)})
	benchData.m[key] = g
	return g
}

func benchParams(name string, g *gen.Generated) map[string]string {
	switch name {
	case "rgrad-nonprivate":
		return map[string]string{"rank": "2"}
	case "rgrad-strict":
		return map[string]string{"rank": "2", "clip_y": "10", "clip": "8"}
	}
	return modelParamsFor(g, nil)
}

// cpuSeconds is the process's user + system CPU time. The benchmarks report
// it per operation beside the wall time: on a shared, overloaded machine the
// CPU time is the steadier measure of the work done.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func reportCPU(b *testing.B, start float64) {
	b.ReportMetric((cpuSeconds()-start)*1e3/float64(b.N), "cpu-ms/op")
}

// BenchmarkFit times one end-to-end in-process fit (sdk.RunLocal) at the
// default configuration d1 = 30, d2 = 20, r = 2, n = 16000, T = ceil(ln n) = 10.
func BenchmarkFit(b *testing.B) {
	g := benchGen(b, 16000, 30, 20)
	for _, name := range []string{"rgrad-dp", "rgrad-weak", "rgrad-strict", "rgrad-nonprivate"} {
		b.Run(name, func(b *testing.B) {
			est := estimatorByName(b, name)
			params := benchParams(name, g)
			b.ResetTimer()
			c0 := cpuSeconds()
			for i := 0; i < b.N; i++ {
				seed := uint64(i)
				if _, _, err := sdk.RunLocal(context.Background(), est, g.Data, params, approx(8, 1e-5), sdk.LocalOptions{Seed: &seed}); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, c0)
		})
	}
}

// BenchmarkFitBackends times rgrad-dp at the default configuration on the
// gonum backend and on backend.Default() side by side (OpenBLAS when built
// with -tags openblas). The design passes are engine/kernel's Go code, so
// only the small factorisations differ.
func BenchmarkFitBackends(b *testing.B) {
	g := benchGen(b, 16000, 30, 20)
	est := estimatorByName(b, "rgrad-dp")
	params := modelParamsFor(g, nil)
	for _, be := range []backend.Backend{backend.Gonum{}, backend.Default()} {
		b.Run(be.Name(), func(b *testing.B) {
			c0 := cpuSeconds()
			for i := 0; i < b.N; i++ {
				seed := uint64(i)
				if _, _, err := sdk.RunLocal(context.Background(), est, g.Data, params, approx(8, 1e-5), sdk.LocalOptions{Seed: &seed, Backend: be}); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, c0)
		})
	}
}

// BenchmarkFitScaling times rgrad-dp fits (T = 10 fixed) across n·d1·d2 to
// show the cost is linear in it.
func BenchmarkFitScaling(b *testing.B) {
	for _, sz := range []struct{ n, d1, d2 int }{
		{16000, 30, 20}, {64000, 30, 20}, {256000, 30, 20},
		{16000, 60, 40}, {4000, 100, 100}, {16000, 100, 100},
	} {
		b.Run(fmt.Sprintf("n=%d/d=%dx%d", sz.n, sz.d1, sz.d2), func(b *testing.B) {
			g := benchGen(b, sz.n, sz.d1, sz.d2)
			est := estimatorByName(b, "rgrad-dp")
			params := modelParamsFor(g, map[string]string{"iterations": "10"})
			b.ResetTimer()
			c0 := cpuSeconds()
			for i := 0; i < b.N; i++ {
				seed := uint64(i)
				if _, _, err := sdk.RunLocal(context.Background(), est, g.Data, params, approx(8, 1e-5), sdk.LocalOptions{Seed: &seed}); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, c0)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(sz.n*sz.d1*sz.d2), "ns/(n·d1·d2)")
		})
	}
}

// BenchmarkPass times one fused residual + gradient pass over the design,
// and the private modes' clipped pass, as a fit makes them (pass.Local in
// process, with its request and result checks).
func BenchmarkPass(b *testing.B) {
	g := benchGen(b, 16000, 30, 20)
	ps := newPasses(g.Data)
	ctx := context.Background()
	m := g.Truth["M"].RawMatrix().Data
	out := make([]float64, 600)
	b.Run("gradient", func(b *testing.B) {
		b.ReportAllocs()
		c0 := cpuSeconds()
		for i := 0; i < b.N; i++ {
			if _, err := ps.gradient(ctx, out, m); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, c0)
	})
	pt := randPoint(b, newRng(1), 30, 20, 2)
	b.Run("clipped-gradient", func(b *testing.B) {
		c0 := cpuSeconds()
		defer reportCPU(b, c0)
		for i := 0; i < b.N; i++ {
			if _, _, err := ps.clippedGradient(ctx, out, m, tangentOf(pt.U, pt.V), 5); err != nil {
				b.Fatal(err)
			}
		}
	})
}
