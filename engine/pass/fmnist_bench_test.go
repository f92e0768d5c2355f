package pass

import (
	"compress/gzip"
	"context"
	"io"
	"os"
	"testing"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/kernel"
)

// fmnistBytes returns the Fashion-MNIST training images (60000×784 bytes
// scaled to [0, 1]) as a rows data set held as bytes, or skips.
func fmnistBytes(b *testing.B) *data.Dataset {
	path := os.Getenv("FMNIST")
	if path == "" {
		path = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
	}
	f, err := os.Open(path)
	if err != nil {
		b.Skip("no Fashion-MNIST images:", err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := io.ReadAll(z)
	if err != nil {
		b.Fatal(err)
	}
	const n, p = 60000, 784
	xb, err := data.NewBytes(n, p, raw[16:16+n*p], 1.0/255)
	if err != nil {
		b.Fatal(err)
	}
	return &data.Dataset{Kind: data.Rows, XBytes: xb}
}

// BenchmarkFMNISTRowsPasses runs the rows passes of pca-analyze-gauss with
// clip=auto and center=private on Fashion-MNIST held as bytes: the norms,
// the clipped sum, the centred norms and the centred clipped moment.
func BenchmarkFMNISTRowsPasses(b *testing.B) {
	ds := fmnistBytes(b)
	ctx := context.Background()
	grid := kernel.DefaultGrid()
	const clip = 10.0
	center := make([]float64, ds.P())
	for j := range center {
		center[j] = 0.3
	}
	b.Run("norms", func(b *testing.B) {
		for b.Loop() {
			if _, err := RowsNormHistogramKind.Local(ctx, ds, &NormHistogramRequest{Grid: grid}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sum", func(b *testing.B) {
		for b.Loop() {
			if _, err := RowsClippedSumKind.Local(ctx, ds, &ClippedSumRequest{Clip: clip}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("centred-norms", func(b *testing.B) {
		for b.Loop() {
			if _, err := RowsNormHistogramKind.Local(ctx, ds, &NormHistogramRequest{Grid: grid, Center: center}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("moment", func(b *testing.B) {
		for b.Loop() {
			if _, err := RowsCentredMomentKind.Local(ctx, ds, &CentredMomentRequest{Clip: clip, Center: center}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
