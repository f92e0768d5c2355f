package gram

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/plugins/internal/clip"
)

const fashionTrain = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"

// fashion returns the Fashion-MNIST training images scaled to [0, 1] and a
// mean-like centre (0.3 in every column).
func fashion(b *testing.B) (*mat.Dense, []float64) {
	b.Helper()
	if _, err := os.Stat(fashionTrain); err != nil {
		b.Skip("dataset-fashion-mnist not installed")
	}
	ds, err := dataio.Load(fashionTrain, dataio.LoadOptions{Scale: 1.0 / 255, SkipHash: true})
	if err != nil {
		b.Fatal(err)
	}
	mu := make([]float64, ds.P())
	for j := range mu {
		mu[j] = 0.3
	}
	return ds.X, mu
}

// BenchmarkSecondMomentPaired times the centred, clipped second moment of
// Fashion-MNIST (60000×784, what pca-analyze-gauss computes with
// center=private and clip=auto) by the reference clip.SecondMoment and by
// SecondMoment, back to back in each iteration, and reports the median of
// the per-iteration ratios (SecondMoment/reference): paired ratios are
// steadier than separate runs on a shared machine. Run it with
// -tags openblas for the multi-threaded backend (the split path).
func BenchmarkSecondMomentPaired(b *testing.B) {
	x, mu := fashion(b)
	be := backend.Default()
	ctx := context.Background()
	var ref, pip, ratios []float64
	for b.Loop() {
		t0 := time.Now()
		if _, _, err := clip.SecondMoment(ctx, be, x, mu, 9, 1.0/60000); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, _, err := SecondMoment(ctx, be, x, mu, 9, 1.0/60000); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		r, p := t1.Sub(t0).Seconds(), t2.Sub(t1).Seconds()
		ref, pip, ratios = append(ref, r), append(pip, p), append(ratios, p/r)
	}
	med := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[len(s)/2]
	}
	b.ReportMetric(med(ref), "ref-s")
	b.ReportMetric(med(pip), "split-s")
	b.ReportMetric(med(ratios), "ratio")
}

// BenchmarkGramPlain is the floor: the uncentred, unclipped product on X
// in place (one syrk, no copy).
func BenchmarkGramPlain(b *testing.B) {
	x, _ := fashion(b)
	be := backend.Default()
	for b.Loop() {
		be.Gram(1.0/60000, x)
	}
}
