package fedrep

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
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
	t5 := map[string]string{"iterations": "5"} // the paper's T (FedRep's default is now 10)
	for _, tc := range []struct {
		name string
		est  sdk.Estimator
		raw  map[string]string
		n    int
	}{
		{"fedrep-private/n=20000", PrivateFedRep{}, t5, 20000},
		{"fedrep-nonprivate/n=20000", NonPrivateFedRep{}, t5, 20000},
		{"privaltmin-disjoint/n=20000", PrivAltMin{}, nil, 20000},
		{"privaltmin-all/n=20000", PrivAltMin{}, map[string]string{"groups": "all"}, 20000},
		{"fedrep-private/n=200000", PrivateFedRep{}, t5, 200000},
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

// BenchmarkKernels times the per-round passes at the paper size.
func BenchmarkKernels(b *testing.B) {
	g := paperData(b, 20000)
	eng := testUsers(b, g.Data, 0.5, 2, 10, lossSquared)
	u := g.Truth["U"].RawMatrix().Data
	ctx := context.Background()
	b.Run("fedrep-round", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, _, err := eng.aggregate(ctx, u, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ustat-init", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, _, err := eng.ustatMean(ctx, 50); err != nil {
				b.Fatal(err)
			}
		}
	})
	users := allUsers(20000)
	b.Run(fmt.Sprintf("altmin-stats/users=%d", len(users)), func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, _, err := eng.altminStats(ctx, u, users, 1e-4, 1e-4, 5); err != nil {
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

// pixelUsers is a users data set shaped like the personalized
// Fashion-MNIST task (n users × m rows, d − 1 features in [0, 1] of which
// about half are exactly 0, as background pixels, plus a constant 1, ±1
// labels), for timing the kernels at d = 197.
func pixelUsers(n, m, d int, seed uint64) *data.Dataset {
	r := rand.New(rand.NewPCG(seed, 7))
	x := mat.NewDense(n*m, d, nil)
	y := make([]float64, n*m)
	start := make([]int, n+1)
	for i := 0; i < n*m; i++ {
		row := x.RawRowView(i)
		for p := 0; p < d-1; p++ {
			if r.Float64() < 0.5 {
				row[p] = r.Float64()
			}
		}
		row[d-1] = 1
		y[i] = float64(2*r.IntN(2) - 1)
	}
	for u := range start {
		start[u] = u * m
	}
	return &data.Dataset{Kind: data.Users, X: x, Y: y, UserStart: start}
}

// fmnistUsers is the personalized Fashion-MNIST task's shape from the real
// images when they are installed (5000 users × 6 consecutive training
// images pooled 2×2 plus a constant, random ±1 labels: the statistics'
// cost depends on the pixels' zeros, not on the labels), else pixelUsers.
func fmnistUsers(b *testing.B) *data.Dataset {
	ds, err := dataio.Load("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz", dataio.LoadOptions{Kind: data.Rows, Scale: 1.0 / 255, SkipHash: true})
	if err != nil {
		b.Logf("Fashion-MNIST not found (%v): synthetic pixels", err)
		return pixelUsers(5000, 6, 197, 1)
	}
	const n, m, d = 5000, 6, 197
	out := pixelUsers(n, m, d, 1)
	for i := 0; i < n*m; i++ {
		src, dst := ds.X.RawRowView(i), out.X.RawRowView(i)
		for a := 0; a < 14; a++ {
			for c := 0; c < 14; c++ {
				dst[a*14+c] = (src[2*a*28+2*c] + src[2*a*28+2*c+1] + src[(2*a+1)*28+2*c] + src[(2*a+1)*28+2*c+1]) / 4
			}
		}
	}
	return out
}

// BenchmarkAltMinStatsPixels times one Priv-AltMin U-step's statistics
// at the Fashion-MNIST task's size (5000 users × 6 rows, d = 197, k = 3: A
// is 591 × 591), with every user in the group (groups=all), in CPU
// seconds beside the wall time (the machine is shared).
func BenchmarkAltMinStatsPixels(b *testing.B) {
	eng := testUsers(b, fmnistUsers(b), 0, 3, math.Inf(1), lossSquared)
	u := mat.NewDense(197, 3, nil)
	for i := 0; i < 3; i++ {
		u.Set(40+i*50, i, 1)
	}
	users := allUsers(5000)
	b.ResetTimer()
	c0 := cpuSeconds()
	for i := 0; i < b.N; i++ {
		if _, _, err := eng.altminStats(context.Background(), u.RawMatrix().Data, users, 1, 1, 5); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuSeconds()-c0)/float64(b.N), "cpu-s/op")
}
