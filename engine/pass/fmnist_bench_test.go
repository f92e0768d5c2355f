package pass

import (
	"compress/gzip"
	"context"
	"io"
	"os"
	"syscall"
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
// a count about the same centre (kernel.SqNorms); and the five passes
// before the Gram (norms about 0, the sum, the norms about a centre, the
// sum, the norms about the mean), each computing its norms (the passes'
// reference implementations) or each sum reading those of the count
// before it (as the in-memory rows source runs them). Besides wall time
// it reports the process's CPU time per op, steadier on a loaded machine.
func BenchmarkFMNISTRowsPasses(b *testing.B) {
	ds := fmnistBytes(b)
	x := RowsMatrix(ds)
	ctx := context.Background()
	grid := kernel.DefaultGrid()
	const clip = 10.0
	center := make([]float64, ds.P())
	for j := range center {
		center[j] = 0.3
	}
	sq0, err := kernel.SqNorms(ctx, x, nil)
	if err != nil {
		b.Fatal(err)
	}
	sqc, err := kernel.SqNorms(ctx, x, center)
	if err != nil {
		b.Fatal(err)
	}
	var ignore any
	fivePasses := func(handOn bool) error {
		for k, c := range [][]float64{nil, nil, center, center, center} {
			switch {
			case !handOn && k%2 == 0:
				ignore, err = RowsNormHistogramKind.Local(ctx, ds, &NormHistogramRequest{Grid: grid, Center: c})
			case !handOn:
				ignore, err = RowsClippedSumKind.Local(ctx, ds, &ClippedSumRequest{Clip: clip, Center: c})
			case k%2 == 0:
				var sq []float64
				if sq, err = kernel.SqNorms(ctx, x, c); err == nil {
					ignore, err = kernel.NormCounts(ctx, x, c, grid, sq...)
				}
				if err == nil && k < 4 {
					ignore, err = kernel.ClippedSum(ctx, x, c, clip, sq...)
				}
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	for _, bc := range []struct {
		name string
		run  func() error
	}{
		{"norms", func() (err error) {
			ignore, err = RowsNormHistogramKind.Local(ctx, ds, &NormHistogramRequest{Grid: grid})
			return err
		}},
		{"sum", func() (err error) {
			ignore, err = RowsClippedSumKind.Local(ctx, ds, &ClippedSumRequest{Clip: clip})
			return err
		}},
		{"sum-given-norms", func() (err error) {
			ignore, err = kernel.ClippedSum(ctx, x, nil, clip, sq0...)
			return err
		}},
		{"centred-norms", func() (err error) {
			ignore, err = RowsNormHistogramKind.Local(ctx, ds, &NormHistogramRequest{Grid: grid, Center: center})
			return err
		}},
		{"moment", func() (err error) {
			ignore, err = RowsCentredMomentKind.Local(ctx, ds, &CentredMomentRequest{Clip: clip, Center: center})
			return err
		}},
		{"moment-given-norms", func() (err error) {
			ignore, _, err = kernel.SecondMoment(ctx, x, center, clip, 1, backend.Default(), sqc...)
			return err
		}},
		{"five-passes/hand-on=false", func() error { return fivePasses(false) }},
		{"five-passes/hand-on=true", func() error { return fivePasses(true) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var r0, r1 syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
			for b.Loop() {
				if err := bc.run(); err != nil {
					b.Fatal(err)
				}
			}
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
			cpu := r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano()
			b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
		})
	}
	_ = ignore
}
