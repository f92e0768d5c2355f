package stats

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/plugins/rgrad"
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
// iterate a side input) and the one-pass sufficient statistics equal the
// single-machine computation on the one file.
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
		g := &GradSum{Sum: make([]float64, d1*d2)}
		for i := range ds.N() {
			gi := Gradient(ds.X.RawRowView(i), ds.Y[i], want)
			clipFrob(gi, clip)
			for j, v := range gi {
				g.Sum[j] += v
			}
			g.N++
		}
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

// TestTraceRgradPasses: the rgrad plugin's two passes — the clipped
// gradient whose per-sample projected terms are bounded by τ (the tangent
// space at the iterate a side input), and the initialisation's clipped
// moment — equal the single-machine computation on the one file built
// from the plugin's own tangent projection (rgrad.TangentProject).
func TestTraceRgradPasses(t *testing.T) {
	const d1, d2, r, n = 3, 4, 2, 300
	rng := rand.New(rand.NewPCG(8, 1))
	x := make([][]float64, n)
	y := make([]float64, n)
	for i := range x {
		x[i] = make([]float64, d1*d2)
		for j := range x[i] {
			x[i][j] = rng.NormFloat64()
		}
		y[i] = 2*x[i][1] - x[i][6] + rng.NormFloat64()
	}
	dir := t.TempDir()
	for k := range 3 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("t-%d.csv", k)), []byte(traceCSV(x[k*100:(k+1)*100], y[k*100:(k+1)*100])), 0o644))
	}
	whole := filepath.Join(t.TempDir(), "whole.csv")
	require.NoError(t, os.WriteFile(whole, []byte(traceCSV(x, y)), 0o644))
	ds, err := dataio.Load(whole, dataio.LoadOptions{Kind: data.Trace, D1: d1, D2: d2})
	require.NoError(t, err)

	// A rank-r iterate and its tangent space.
	m := mat.NewDense(d1, d2, nil)
	for i := range d1 {
		for j := range d2 {
			m.Set(i, j, rng.NormFloat64())
		}
	}
	var svd mat.SVD
	require.True(t, svd.Factorize(m, mat.SVDThin))
	var uu, vv mat.Dense
	svd.UTo(&uu)
	svd.VTo(&vv)
	u := mat.DenseCopyOf(uu.Slice(0, d1, 0, r))
	v := mat.DenseCopyOf(vv.Slice(0, d2, 0, r))
	vals := svd.Values(nil)
	var us, mr mat.Dense
	us.Mul(u, mat.NewDiagDense(r, vals[:r]))
	mr.Mul(&us, v.T())
	it := TangentIterate{M: mat.DenseCopyOf(&mr).RawMatrix().Data, U: u.RawMatrix().Data, V: v.RawMatrix().Data, R: r}

	const tau = 1.5
	to := TraceOptions{D1: d1, D2: d2}
	got, err := ProjectedGradientSum(context.Background(), filepath.Join(dir, "t-*.csv"), to, it, tau, Options{})
	require.NoError(t, err)
	want := make([]float64, d1*d2)
	var loss float64
	var clipped int64
	for i := range ds.N() {
		xi := mat.NewDense(d1, d2, append([]float64(nil), ds.X.RawRowView(i)...))
		res := floats.Dot(xi.RawMatrix().Data, mat.DenseCopyOf(&mr).RawMatrix().Data) - ds.Y[i]
		loss += res * res
		w := res
		if g := math.Abs(res) * mat.Norm(rgrad.TangentProject(u, v, xi), 2); g > tau {
			w = res * tau / g
			clipped++
		}
		for j, xv := range xi.RawMatrix().Data {
			want[j] += w * xv
		}
	}
	assert.EqualValues(t, n, got.N)
	assert.Equal(t, clipped, got.Clipped)
	assert.Greater(t, clipped, int64(0), "the clip bites")
	assert.Less(t, relVec(got.Sum, want), 1e-12)
	assert.InEpsilon(t, loss, got.Loss, 1e-12)

	const cx, cy = 4.0, 2.0
	mom, err := ClippedMoment(context.Background(), filepath.Join(dir, "t-*.csv"), to, cx, cy, Options{})
	require.NoError(t, err)
	ref := make([]float64, d1*d2)
	for i := range ds.N() {
		xi := ds.X.RawRowView(i)
		s := math.Min(1, cx/floats.Norm(xi, 2))
		yi := math.Max(-cy, math.Min(cy, ds.Y[i]))
		floats.AddScaled(ref, s*yi, xi)
	}
	assert.Less(t, relVec(mom.Sum, ref), 1e-12)
}
