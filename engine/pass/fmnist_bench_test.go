package pass

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/dplr/dplr/backend"
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
// the clipped sum, the centred norms and the centred clipped moment, each
// computing its own norms; the sum and the moment reading the norms of
// a count about the same centre (kernel.SqNorms); and the five passes of
// the fit before the Gram (norms about 0, the sum, the norms about a
// centre, the sum, the norms about the mean) as the in-memory rows source
// runs them, each sum reading the norms of the count before it.
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
	b.Run("sum-given-norms", func(b *testing.B) {
		sq, err := kernel.SqNorms(ctx, RowsMatrix(ds), nil)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := kernel.ClippedSum(ctx, RowsMatrix(ds), nil, clip, sq...); err != nil {
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
	b.Run("moment-given-norms", func(b *testing.B) {
		sq, err := kernel.SqNorms(ctx, RowsMatrix(ds), center)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, _, err := kernel.SecondMoment(ctx, RowsMatrix(ds), center, clip, 1, backend.Default(), sq...); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The five passes before the Gram, each computing its norms (the
	// passes' reference implementations) or each sum reading those of the
	// count before it (as the in-memory rows source runs them).
	for _, handOn := range []bool{false, true} {
		b.Run(fmt.Sprintf("five-passes/hand-on=%v", handOn), func(b *testing.B) {
			x := RowsMatrix(ds)
			for b.Loop() {
				for k, c := range [][]float64{nil, nil, center, center, center} {
					var err error
					switch {
					case !handOn && k%2 == 0:
						_, err = RowsNormHistogramKind.Local(ctx, ds, &NormHistogramRequest{Grid: grid, Center: c})
					case !handOn:
						_, err = RowsClippedSumKind.Local(ctx, ds, &ClippedSumRequest{Clip: clip, Center: c})
					case k%2 == 0:
						var sq []float64
						if sq, err = kernel.SqNorms(ctx, x, c); err == nil {
							_, err = kernel.NormCounts(ctx, x, c, grid, sq...)
						}
						if err == nil && k < 4 {
							_, err = kernel.ClippedSum(ctx, x, c, clip, sq...)
						}
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
