package pca

import (
	"context"
	"math"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/sdk"
)

// TestFashionMNISTThroughPasses is the headline fit (pca-analyze-gauss,
// rank 10, clip=auto, center=private, ε = 1, δ = 1e-6, pixels scaled to
// [0, 1]) on the 60,000 Fashion-MNIST training images, once on the rows
// and once through aggregation passes (pass.Local: what the Beam path
// computes), same seed. It runs only when DPLR_FMNIST names the IDX file
// (bench/results/beam-host.md gives the command and the figures).
func TestFashionMNISTThroughPasses(t *testing.T) {
	path := os.Getenv("DPLR_FMNIST")
	if path == "" {
		t.Skip("DPLR_FMNIST not set")
	}
	ds, err := dataio.Load(path, dataio.LoadOptions{Scale: 1.0 / 255})
	require.NoError(t, err)
	raw := map[string]string{"rank": "10", "center": "private"}
	grant := approx(1, 1e-6)
	seed := uint64(7)
	rounds := 3
	for r := 0; r < rounds; r++ {
		t0 := time.Now()
		want, wacct, err := sdk.RunLocal(context.Background(), AnalyzeGauss{}, ds, raw, grant, sdk.LocalOptions{Seed: &seed})
		require.NoError(t, err)
		tLocal := time.Since(t0)
		var passes []string
		counting := passerFunc(func(ctx context.Context, req data.PassRequest) (*data.PassResult, error) {
			passes = append(passes, req.Kind)
			return pass.Local(ds).Pass(ctx, req)
		})
		t0 = time.Now()
		got, gacct, err := sdk.RunLocal(context.Background(), AnalyzeGauss{}, pass.RemoteOf(ds, counting), raw, grant, sdk.LocalOptions{Seed: &seed})
		require.NoError(t, err)
		tRemote := time.Since(t0)
		assert.Equal(t, wacct.Steps(), gacct.Steps())
		load, _ := os.ReadFile("/proc/loadavg")
		t.Logf("round %d: local %.1f s, through %d passes %v %.1f s (load %s)", r+1, tLocal.Seconds(), len(passes), passes, tRemote.Seconds(), string(load[:14]))
		if r > 0 {
			continue
		}
		u, v := matrix(t, want, "U"), matrix(t, got, "U")
		_, k := u.Dims()
		minAbs, flips := 1.0, 0
		var worstCol float64
		for j := 0; j < k; j++ {
			d := mat.Dot(u.ColView(j), v.ColView(j))
			minAbs = math.Min(minAbs, math.Abs(d))
			s := 1.0
			if d < 0 {
				flips++
				s = -1
			}
			for i := 0; i < u.RawMatrix().Rows; i++ {
				worstCol = math.Max(worstCol, math.Abs(u.At(i, j)-s*v.At(i, j)))
			}
		}
		t.Logf("U: min |<u_j, u_j'>| = 1 - %.3g, %d of %d columns of opposite sign, max |u - ±u'| = %.3g", 1-minAbs, flips, k, worstCol)
		for _, name := range []string{"eigenvalues", "explained_variance_ratio"} {
			t.Logf("%s: relative difference %.3g", name, relDiff(series(t, got, name), series(t, want, name)))
		}
		t.Logf("mean: relative difference %.3g", relDiff(matrix(t, got, "mean").RawMatrix().Data, matrix(t, want, "mean").RawMatrix().Data))
		for _, name := range []string{"clip", "mean_clip", "noise_sd", "clipped_rows"} {
			t.Logf("%s: local %.17g, passes %.17g", name, scalar(t, want, name), scalar(t, got, name))
		}
	}
}
