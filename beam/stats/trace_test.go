package stats

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/kernel"
)

func traceCSV(x [][]float64, y []float64) string {
	var b strings.Builder
	for j := range x[0] {
		fmt.Fprintf(&b, "x%d,", j)
	}
	b.WriteString("y\n")
	for i := range x {
		for _, v := range x[i] {
			b.WriteString(strconvFormat(v) + ",")
		}
		b.WriteString(strconvFormat(y[i]) + "\n")
	}
	return b.String()
}

// TestTraceMatchesSingleMachine: the driver loop of gradient passes (the
// iterate a side input) equals the loop over the one file with the
// kernel (kernel.ClippedGradient), and the one-pass sufficient statistics
// equal the single-machine computation.
func TestTraceMatchesSingleMachine(t *testing.T) {
	const d1, d2, n, clip = 2, 3, 600, 2.0
	r := rand.New(rand.NewPCG(5, 6))
	x := make([][]float64, n)
	y := make([]float64, n)
	for i := range x {
		x[i] = make([]float64, d1*d2)
		for j := range x[i] {
			x[i][j] = r.NormFloat64()
		}
		y[i] = x[i][0] - 2*x[i][4] + r.NormFloat64()*0.1
	}
	dir := t.TempDir()
	for k := range 3 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("t-%d.csv", k)), []byte(traceCSV(x[k*200:(k+1)*200], y[k*200:(k+1)*200])), 0o644))
	}
	whole := filepath.Join(t.TempDir(), "whole.csv")
	require.NoError(t, os.WriteFile(whole, []byte(traceCSV(x, y)), 0o644))
	ds, err := dataio.Load(whole, dataio.LoadOptions{Kind: data.Trace, D1: d1, D2: d2})
	require.NoError(t, err)

	step := func(t int, th []float64, g *GradSum) ([]float64, error) {
		out := make([]float64, len(th))
		for j := range th {
			out[j] = th[j] - 0.5*g.Sum[j]/float64(g.N)
		}
		return out, nil
	}
	to := TraceOptions{D1: d1, D2: d2}
	got, err := GradientLoop(context.Background(), filepath.Join(dir, "t-*.csv"), to, make([]float64, d1*d2), clip, 3, step, Options{})
	require.NoError(t, err)
	want := make([]float64, d1*d2)
	for pass := range 3 {
		g := &GradSum{Sum: make([]float64, d1*d2), N: int64(ds.N())}
		_, c := kernel.ClippedGradient(g.Sum, ds.X.RawMatrix().Data, d1*d2, ds.Y, want, clip)
		assert.Positive(t, c, "the clip bites")
		want, _ = step(pass, want, g)
	}
	assert.Less(t, relVec(got, want), 1e-12)

	st, err := SufficientStats(context.Background(), filepath.Join(dir, "t-*.csv"), to, 10, Options{})
	require.NoError(t, err)
	p := d1*d2 + 1
	ref := make([]float64, p*p)
	for i := range ds.N() {
		z, _ := clipRow(append(append([]float64(nil), ds.X.RawRowView(i)...), ds.Y[i]), 10)
		for a := range p {
			for b := a; b < p; b++ {
				ref[a*p+b] += z[a] * z[b]
			}
		}
	}
	upper := make([]float64, p*p)
	for a := range p {
		for b := a; b < p; b++ {
			upper[a*p+b] = st.Moment[a*p+b]
		}
	}
	assert.EqualValues(t, n, st.N)
	assert.Less(t, relVec(upper, ref), 1e-12)
}
