package privacy

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"
)

var sinkF float64

// cpuTime is the process's user+system CPU time; benchmarks report it per
// op beside wall time because the shared machine makes wall time noisy.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkSymmetricNoise2000 compares the exact discrete Gaussian release
// noise for a 2000×2000 symmetric matrix (2,001,000 draws; secure-784:
// Fashion-MNIST's 784×784, 307,720 draws), drawn in chunks on
// GOMAXPROCS goroutines (run with -cpu 1,2), with a naive math/rand/v2
// NormFloat64 fill of the same triangle on one goroutine.
func BenchmarkSymmetricNoise2000(b *testing.B) {
	const n = 2000
	for _, size := range []int{n, 784} {
		name := "secure-discrete"
		if size != n {
			name = fmt.Sprintf("secure-%d", size)
		}
		b.Run(name, func(b *testing.B) {
			src := NewSeededSource(1)
			c := cpuTime()
			for i := 0; i < b.N; i++ {
				m := mat.NewSymDense(size, nil)
				src.AddSymmetricGaussian(m, 3.7)
				sinkF += m.At(1, 2)
			}
			reportCPU(b, c)
		})
	}
	b.Run("naive-normfloat64", func(b *testing.B) {
		r := rand.New(rand.NewChaCha8([32]byte{1}))
		c := cpuTime()
		for i := 0; i < b.N; i++ {
			data := make([]float64, n*n)
			for r0 := 0; r0 < n; r0++ {
				row := data[r0*n+r0 : r0*n+n]
				for j := range row {
					row[j] += 3.7 * r.NormFloat64()
				}
			}
			sinkF += data[3]
		}
		reportCPU(b, c)
	})
}

func BenchmarkDraw(b *testing.B) {
	b.Run("gaussian", func(b *testing.B) {
		src := NewSeededSource(1)
		c := cpuTime()
		for i := 0; i < b.N; i++ {
			sinkF += src.Gaussian(3.7)
		}
		reportCPU(b, c)
	})
	b.Run("laplace", func(b *testing.B) {
		src := NewSeededSource(1)
		c := cpuTime()
		for i := 0; i < b.N; i++ {
			sinkF += src.Laplace(3.7)
		}
		reportCPU(b, c)
	})
	b.Run("naive-norm", func(b *testing.B) {
		r := rand.New(rand.NewChaCha8([32]byte{1}))
		c := cpuTime()
		for i := 0; i < b.N; i++ {
			sinkF += r.NormFloat64()
		}
		reportCPU(b, c)
	})
}

func BenchmarkConversions(b *testing.B) {
	b.Run("EpsilonFromRho", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			sinkF += EpsilonFromRho(0.025, 1e-6)
		}
	})
	b.Run("RhoForEpsDelta", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			r, _ := RhoForEpsDelta(1, 1e-6)
			sinkF += r
		}
	})
	b.Run("RhoForEpsDeltaSimple", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			r, _ := RhoForEpsDeltaSimple(1, 1e-6)
			sinkF += r
		}
	})
	b.Run("AnalyticGaussianSigma", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			s, _ := AnalyticGaussianSigma(1, 1, 1e-6)
			sinkF += s
		}
	})
	b.Run("Spend10Steps", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			a, _ := NewAccountant(Grant{Kind: GrantApprox, Epsilon: 1, Delta: 1e-6})
			total, _ := a.TotalRho()
			for j := 0; j < 10; j++ {
				s, _ := a.spendGaussianRho("g", 1, 100, total/10)
				sinkF += s
			}
		}
	})
}

// mixedRun is a typical mixed run's steps: a private clip quantile
// (exponential mechanism), a Laplace mean, three exponential-mechanism
// draws and a Gaussian release, at budgets near a (1, 1e-6) grant's.
func mixedRun() []Step {
	return []Step{
		{Name: "clip", Mechanism: MechExponential, Sensitivity: 1, Scale: 0.05, Epsilon: 0.1, Rho: RhoOfExponential(0.1)},
		{Name: "mean", Mechanism: MechLaplace, Sensitivity: 1, Scale: 10, Epsilon: 0.1, Rho: RhoOfPure(0.1)},
		{Name: "vector", Mechanism: MechExponential, Sensitivity: 1, Scale: 0.1, Epsilon: 0.2, Rho: RhoOfExponential(0.2)},
		{Name: "vector", Mechanism: MechExponential, Sensitivity: 1, Scale: 0.1, Epsilon: 0.2, Rho: RhoOfExponential(0.2)},
		{Name: "vector", Mechanism: MechExponential, Sensitivity: 1, Scale: 0.1, Epsilon: 0.2, Rho: RhoOfExponential(0.2)},
		{Name: "moment", Mechanism: MechGaussian, Sensitivity: 1, Scale: 6, Rho: RhoOfGaussian(1, 6)},
	}
}

// BenchmarkMixedRunAccounting is the time to account one typical mixed run
// (RunPLD + Epsilon at δ = 1e-6): connect-the-dots with bounded range (the
// default) against the round-up + randomized response PLD it replaces.
func BenchmarkMixedRunAccounting(b *testing.B) {
	steps := mixedRun()
	for _, m := range []struct {
		name string
		run  func([]Step, float64) (*PLD, error)
	}{{"connect-the-dots", RunPLD}, {"round-up + randomized response", roundUpRun}} {
		b.Run(m.name, func(b *testing.B) {
			c := cpuTime()
			for i := 0; i < b.N; i++ {
				p, err := m.run(steps, DefaultPLDGrid)
				if err != nil {
					b.Fatal(err)
				}
				e, err := p.Epsilon(1e-6)
				if err != nil {
					b.Fatal(err)
				}
				sinkF += e
			}
			reportCPU(b, c)
		})
	}
}

// BenchmarkExactPlanMixed is NewPlan(NoiseExact) for a mixed plan (a
// clip-quantile exponential share, a Laplace mean, three exponential
// draws, a Gaussian release): the bisection of the zCDP split's scale by
// the PLD, done once per fit.
func BenchmarkExactPlanMixed(b *testing.B) {
	shares := []Share{
		{Name: "clip", Weight: 0.1, Mechanism: MechExponential},
		{Name: "mean", Weight: 0.1, Mechanism: MechLaplace},
		{Name: "vectors", Weight: 0.4, Steps: 3, Mechanism: MechExponential},
		{Name: "moment", Weight: 0.4, Mechanism: MechGaussian},
	}
	c := cpuTime()
	for i := 0; i < b.N; i++ {
		a, err := NewAccountant(Grant{Kind: GrantApprox, Epsilon: 1, Delta: 1e-6})
		if err != nil {
			b.Fatal(err)
		}
		p, err := NewPlan(a, NoiseExact, shares...)
		if err != nil {
			b.Fatal(err)
		}
		sinkF += p.Total().Rho
	}
	reportCPU(b, c)
}
