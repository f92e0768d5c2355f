package pca

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// FashionMNISTPath is the Debian dataset-fashion-mnist training images.
const FashionMNISTPath = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"

var (
	fmOnce sync.Once
	fmData *data.Dataset
	fmErr  error
)

func fashionMNIST(b testing.TB) *data.Dataset {
	b.Helper()
	if _, err := os.Stat(FashionMNISTPath); err != nil {
		b.Skipf("Fashion-MNIST not installed: %v", err)
	}
	fmOnce.Do(func() { fmData, fmErr = dataio.Load(FashionMNISTPath, dataio.LoadOptions{Scale: 1.0 / 255}) })
	if fmErr != nil {
		b.Fatal(fmErr)
	}
	return fmData
}

// FashionMNISTRuns are the r = 10 configurations timed on Fashion-MNIST
// (60000×784, pixels scaled to [0, 1], so every row norm is at most
// √784 = 28: clip = 28 is a data-independent bound that never clips).
var fashionRuns = []struct {
	name  string
	est   sdk.Estimator
	raw   map[string]string
	grant privacy.Grant
}{
	{"nonprivate", NonPrivate{}, map[string]string{"rank": "10"}, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-5}},
	{"analyze-gauss", AnalyzeGauss{}, map[string]string{"rank": "10", "clip": "28"}, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-5}},
	{"analyze-gauss-clip10", AnalyzeGauss{}, map[string]string{"rank": "10", "clip": "10"}, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-5}},
	{"cxz", CXZ{}, map[string]string{"rank": "10", "sigma2": "0.01", "lambda": "0.5", "lambda_upper": "20"}, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-5}},
	{"amin", Amin{}, map[string]string{"rank": "10", "clip": "28"}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1}},
}

// BenchmarkFashionMNIST times one fit (Gram, private steps, outputs) on the
// loaded data set; loading is excluded (see bench/results/pca.md).
func BenchmarkFashionMNIST(b *testing.B) {
	d := fashionMNIST(b)
	for _, run := range fashionRuns {
		b.Run(run.name, func(b *testing.B) {
			seed := uint64(1)
			for i := 0; i < b.N; i++ {
				if _, _, err := sdk.RunLocal(context.Background(), run.est, d, run.raw, run.grant, sdk.LocalOptions{Seed: &seed}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSpikedSmall times the small spiked configuration of DERIVATIONS.md §2 (p = 50, r = 2,
// n = 50 000) for each estimator.
func BenchmarkSpikedSmall(b *testing.B) {
	g := spiked(b, 50000, 50, 2, "12,10", "gaussian", 1)
	runs := []struct {
		name  string
		est   sdk.Estimator
		raw   map[string]string
		grant privacy.Grant
	}{
		{"nonprivate", NonPrivate{}, map[string]string{"rank": "2"}, approx(1, 1e-5)},
		{"cxz", CXZ{}, map[string]string{"rank": "2", "sigma2": "1", "lambda": "12,10"}, approx(1, 1e-5)},
		{"analyze-gauss", AnalyzeGauss{}, map[string]string{"rank": "2", "clip": "15"}, approx(1, 1e-5)},
		{"amin", Amin{}, map[string]string{"rank": "2", "clip": "15"}, pure(1)},
	}
	for _, run := range runs {
		b.Run(run.name, func(b *testing.B) {
			seed := uint64(1)
			for i := 0; i < b.N; i++ {
				if _, _, err := sdk.RunLocal(context.Background(), run.est, g.Data, run.raw, run.grant, sdk.LocalOptions{Seed: &seed}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
