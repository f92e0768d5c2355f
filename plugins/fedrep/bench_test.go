package fedrep

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"

	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/sdk"
)

var (
	benchMu   sync.Mutex
	benchData = map[int]*gen.Generated{}
)

// paperData returns the paper configuration's data set with n users
// (d = 50, k = 2, m = 10, R = 0.01), generated once per process.
func paperData(b *testing.B, n int) *gen.Generated {
	benchMu.Lock()
	defer benchMu.Unlock()
	if g, ok := benchData[n]; ok {
		return g
	}
	g := genUsers(b, n, 10, 50, 2, 0.01, 1)
	benchData[n] = g
	return g
}

// BenchmarkPaperConfig times one end-to-end fit (validation, private start,
// T = 5 rounds, final heads) of each estimator on the paper configuration,
// per ε, and FedRep's scaling to n = 200000.
func BenchmarkPaperConfig(b *testing.B) {
	for _, tc := range []struct {
		name string
		est  sdk.Estimator
		raw  map[string]string
		n    int
	}{
		{"fedrep-private/n=20000", PrivateFedRep{}, nil, 20000},
		{"fedrep-nonprivate/n=20000", NonPrivateFedRep{}, nil, 20000},
		{"privaltmin-disjoint/n=20000", PrivAltMin{}, nil, 20000},
		{"privaltmin-all/n=20000", PrivAltMin{}, map[string]string{"groups": "all"}, 20000},
		{"fedrep-private/n=200000", PrivateFedRep{}, nil, 200000},
	} {
		b.Run(tc.name, func(b *testing.B) {
			g := paperData(b, tc.n)
			seed := uint64(1)
			b.ResetTimer()
			c0 := cpuSeconds()
			for i := 0; i < b.N; i++ {
				if _, _, err := sdk.RunLocal(context.Background(), tc.est, g.Data, tc.raw, approx(1), sdk.LocalOptions{Seed: &seed}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuSeconds()-c0)/float64(b.N), "cpu-s/op")
		})
	}
}

// BenchmarkKernels times the per-round kernels at the paper size.
func BenchmarkKernels(b *testing.B) {
	g := paperData(b, 20000)
	lay := testLayout(b, g.Data, 0.5)
	eng := newFedrepEngine(g.Data.X, g.Data.Y, lay, 2, 10, lossSquared)
	u := g.Truth["U"].RawMatrix().Data
	b.Run("fedrep-round", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, _, err := eng.aggregate(context.Background(), u, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ustat-init", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, _, err := ustatAggregate(context.Background(), be, g.Data.X, g.Data.Y, lay, 50, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ustat-init-loop", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, _, err := ustatAggregateLoop(context.Background(), g.Data.X, g.Data.Y, lay, 50); err != nil {
				b.Fatal(err)
			}
		}
	})
	users := make([]int32, 20000)
	for i := range users {
		users[i] = int32(i)
	}
	b.Run(fmt.Sprintf("altmin-stats/users=%d", len(users)), func(b *testing.B) {
		eng.psi = 1e300
		for i := 0; i < b.N; i++ {
			if _, _, err := altminStats(context.Background(), eng, u, users, 1e-4, 1e-4, 5); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// cpuSeconds is the process's user + system CPU time: on this shared,
// overloaded machine it is a steadier measure of the work than wall time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}
