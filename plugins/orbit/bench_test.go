package orbit

import (
	"context"
	"fmt"
	"testing"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// BenchmarkFit times one full orbit-em release (clip, Gram, eigenvalues,
// sampling) through sdk.RunLocal: the per-sample cost of the speed
// goals (default d = 20, k = 3 ≤ 0.2 s; d = 100, k = 10 ≤ 2 s).
func BenchmarkFit(b *testing.B) {
	for _, c := range []struct{ d, k, n int }{{20, 3, 2000}, {100, 10, 2000}, {100, 5, 5000}} {
		b.Run(fmt.Sprintf("d=%d,k=%d,n=%d", c.d, c.k, c.n), func(b *testing.B) {
			ds := genData(b, c.n, c.d, c.k, 1)
			raw := map[string]string{"rank": fmt.Sprint(c.k)}
			b.ResetTimer()
			c0 := processCPU()
			defer func() { b.ReportMetric((processCPU()-c0)*1e3/float64(b.N), "cpu-ms/op") }()
			for i := 0; i < b.N; i++ {
				seed := uint64(i)
				if _, _, err := sdk.RunLocal(context.Background(), EM{}, ds, raw, pure(1), sdk.LocalOptions{Seed: &seed}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGibbsSweeps reports Givens–Gibbs throughput (sweeps/s) against d
// at k = 5 (PCA spectrum), 100 sweeps per op.
func BenchmarkGibbsSweeps(b *testing.B) {
	for _, d := range []int{10, 20, 50, 100, 200} {
		b.Run(fmt.Sprintf("d=%d,k=5", d), func(b *testing.B) {
			ds := genData(b, 2000, d, 5, 2)
			a := clippedA(b, ds)
			lambda := []float64{1, 1, 1, 1, 1}
			src := privacy.NewSeededSource(3)
			const sweeps = 100
			b.ResetTimer()
			c0 := processCPU()
			for i := 0; i < b.N; i++ {
				if _, err := GibbsSample(context.Background(), src, a, lambda, 0.5, GibbsConfig{Sweeps: sweeps, Backend: backend.Default()}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(sweeps*b.N)/b.Elapsed().Seconds(), "sweeps/s")
			if cpu := processCPU() - c0; cpu > 0 {
				b.ReportMetric(float64(sweeps*b.N)/cpu, "sweeps/cpu-s")
			}
		})
	}
}

// BenchmarkExactRankOne times one exact k = 1 draw (eigendecomposition and
// rejection sampling) on the orbit-spiked data.
func BenchmarkExactRankOne(b *testing.B) {
	for _, d := range []int{20, 100} {
		b.Run(fmt.Sprintf("d=%d", d), func(b *testing.B) {
			ds := genData(b, 2000, d, 3, 4)
			a := clippedA(b, ds)
			src := privacy.NewSeededSource(5)
			b.ResetTimer()
			c0 := processCPU()
			defer func() { b.ReportMetric((processCPU()-c0)*1e3/float64(b.N), "cpu-ms/op") }()
			for i := 0; i < b.N; i++ {
				if _, err := SampleOrbit(context.Background(), src, a, []float64{1}, 0.5, SamplerAuto, 0, backend.Default(), nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
