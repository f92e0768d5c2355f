package pass

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/kernel"
)

const traceD1, traceD2, traceR = 4, 3, 2

// traceData draws n trace samples X_i (4×3) with y_i = <X_i, M> + noise.
func traceData(n int, seed uint64) *data.Dataset {
	rng := rand.New(rand.NewPCG(seed, 7))
	p := traceD1 * traceD2
	x := mat.NewDense(n, p, nil)
	y := make([]float64, n)
	for i := 0; i < n; i++ {
		for j := 0; j < p; j++ {
			x.Set(i, j, rng.NormFloat64())
		}
		y[i] = 2*x.At(i, 1) - x.At(i, 5) + 0.3*rng.NormFloat64()
	}
	return &data.Dataset{Kind: data.Trace, X: x, Y: y, D1: traceD1, D2: traceD2}
}

// tangentPoint returns an iterate m (1×p) and its tangent space's u (d1×r)
// and vt (r×d2), from the SVD of a random matrix.
func tangentPoint(seed uint64) (m, u, vt []float64) {
	rng := rand.New(rand.NewPCG(seed, 3))
	a := mat.NewDense(traceD1, traceD2, nil)
	for i := 0; i < traceD1; i++ {
		for j := 0; j < traceD2; j++ {
			a.Set(i, j, rng.NormFloat64())
		}
	}
	var svd mat.SVD
	if !svd.Factorize(a, mat.SVDThin) {
		panic("svd")
	}
	var uu, vv mat.Dense
	svd.UTo(&uu)
	svd.VTo(&vv)
	s := svd.Values(nil)
	ur := mat.DenseCopyOf(uu.Slice(0, traceD1, 0, traceR))
	vr := mat.DenseCopyOf(vv.Slice(0, traceD2, 0, traceR))
	var us, mm mat.Dense
	us.Mul(ur, mat.NewDiagDense(traceR, s[:traceR]))
	mm.Mul(&us, vr.T())
	return mat.DenseCopyOf(&mm).RawMatrix().Data, ur.RawMatrix().Data, mat.DenseCopyOf(vr.T()).RawMatrix().Data
}

// projDense is P_T(a) by gonum products, the reference for TangentProject.
func projDense(a, u, vt []float64) []float64 {
	A := mat.NewDense(traceD1, traceD2, a)
	U := mat.NewDense(traceD1, traceR, u)
	Vt := mat.NewDense(traceR, traceD2, vt)
	var uu, vv, t1, t2, t3 mat.Dense
	uu.Mul(U, U.T())
	vv.Mul(Vt.T(), Vt)
	t1.Mul(&uu, A)
	t2.Mul(A, &vv)
	t3.Mul(&t1, &vv)
	t1.Add(&t1, &t2)
	t1.Sub(&t1, &t3)
	return mat.DenseCopyOf(&t1).RawMatrix().Data
}

// traceShape is the shape of traceData.
var traceShape = &data.Remote{N: 1, P: traceD1 * traceD2, D1: traceD1, D2: traceD2}

func clipGradReq(m, u, vt []float64, tau float64) data.PassRequest {
	return TraceClippedGradientKind.EncodeRequest(traceShape, TraceClippedGradientRequest{Tau: tau, Rank: traceR, M: m, U: u, Vt: vt})
}

func tangentOf(u, vt []float64) kernel.Tangent {
	return kernel.Tangent{D1: traceD1, D2: traceD2, R: traceR, U: u, Vt: vt}
}

// TestTracePassesLocal: each reference pass equals the same sum written
// with gonum, the clips bite, and the results pass the host's checks.
func TestTracePassesLocal(t *testing.T) {
	const n = 200
	ds := traceData(n, 1)
	p := traceD1 * traceD2
	m, u, vt := tangentPoint(4)
	ctx := context.Background()
	const cx, cy, tau = 3.0, 2.0, 1.0

	wantMom := make([]float64, p)
	wantCM := make([]float64, p)
	wantGrad := make([]float64, p)
	wantCG := make([]float64, p)
	var loss float64
	var cmClipped, cgClipped int
	for i := 0; i < n; i++ {
		x, y := ds.X.RawRowView(i), ds.Y[i]
		floats.AddScaled(wantMom, y, x)
		s := math.Min(1, cx/floats.Norm(x, 2))
		yc := math.Max(-cy, math.Min(cy, y))
		if s < 1 || yc != y {
			cmClipped++
		}
		floats.AddScaled(wantCM, s*yc, x)
		res := floats.Dot(x, m) - y
		loss += res * res
		floats.AddScaled(wantGrad, res, x)
		w := res
		if g := math.Abs(res) * floats.Norm(projDense(x, u, vt), 2); g > tau {
			w = res * tau / g
			cgClipped++
		}
		floats.AddScaled(wantCG, w, x)
	}
	require.Greater(t, cmClipped, 0)
	require.Greater(t, cgClipped, 0)

	for _, tc := range []struct {
		name    string
		req     data.PassRequest
		want    []float64
		scalars map[string]float64
	}{
		{"moment", TraceMomentKind.EncodeRequest(traceShape, TraceMomentRequest{}), wantMom, nil},
		{"clipped moment", TraceClippedMomentKind.EncodeRequest(traceShape, TraceClippedMomentRequest{ClipX: cx, ClipY: cy}), wantCM,
			map[string]float64{"clipped": float64(cmClipped)}},
		{"gradient", TraceGradientKind.EncodeRequest(traceShape, TraceGradientRequest{M: m}), wantGrad, map[string]float64{"loss": loss}},
		{"clipped gradient", clipGradReq(m, u, vt, tau), wantCG, map[string]float64{"loss": loss, "clipped": float64(cgClipped)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Local(ds).Pass(ctx, tc.req) // validates request and result
			require.NoError(t, err)
			assert.Equal(t, int64(n), res.Records)
			sum, ok := res.Output("sum")
			require.True(t, ok)
			assert.InDeltaSlice(t, tc.want, sum.Data, 1e-11)
			require.Len(t, res.Scalars, len(tc.scalars))
			for k, v := range tc.scalars {
				assert.InEpsilon(t, v, res.Scalars[k], 1e-12, k)
			}
		})
	}
}

// TestTraceRefusals: requests outside a kind's ranges and results that
// break the bounds aggregates allow are refused, without the private value
// in the message.
func TestTraceRefusals(t *testing.T) {
	ds := traceData(50, 2)
	sh := ShapeOf(ds)
	m, u, vt := tangentPoint(5)
	bad := func(f func(r *data.PassRequest)) data.PassRequest {
		r := clipGradReq(m, u, vt, 1)
		r.Params = map[string]float64{"tau": 1, "rank": traceR}
		r.Inputs = append([]data.Array(nil), r.Inputs...)
		f(&r)
		return r
	}
	skewed := append([]float64(nil), u...)
	skewed[0] += 1e-3
	for _, tc := range []struct {
		name string
		req  data.PassRequest
		want string
	}{
		{"zero cx", data.PassRequest{Kind: TraceClippedMoment, Params: map[string]float64{"cx": 0, "cy": 1}}, "cx = 0 must be positive"},
		{"gradient without iterate", data.PassRequest{Kind: TraceGradient}, "0 inputs, want [m]"},
		{"zero tau", bad(func(r *data.PassRequest) { r.Params["tau"] = 0 }), "tau = 0"},
		{"fractional rank", bad(func(r *data.PassRequest) { r.Params["rank"] = 1.5 }), "rank = 1.5 is not an integer"},
		{"rank too large", bad(func(r *data.PassRequest) { r.Params["rank"] = 4 }), "is 4×2, want 4×0"},
		{"u not orthonormal", bad(func(r *data.PassRequest) {
			r.Inputs[1] = data.Array{Name: "u", Rows: traceD1, Cols: traceR, Data: skewed}
		}), "orthonormal columns"},
		{"moment with a parameter", data.PassRequest{Kind: TraceMoment, Params: map[string]float64{"clip": 1}}, "unknown parameter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Validate(data.Trace, sh, tc.req)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		req    data.PassRequest
		break_ func(r *data.PassResult)
		want   string
	}{
		{"unclipped moment", data.PassRequest{Kind: TraceClippedMoment, Params: map[string]float64{"cx": 1, "cy": 1}},
			func(r *data.PassResult) { r.Outputs[0].Data[0] = 51 }, "exceeds n·cx·cy"},
		{"fractional count", data.PassRequest{Kind: TraceClippedMoment, Params: map[string]float64{"cx": 1, "cy": 1}},
			func(r *data.PassResult) { r.Scalars["clipped"] = 0.5 }, "not an integer"},
		{"count above n", data.PassRequest{Kind: TraceClippedMoment, Params: map[string]float64{"cx": 1, "cy": 1}},
			func(r *data.PassResult) { r.Scalars["clipped"] = 51 }, "not a count"},
		{"negative loss", data.PassRequest{Kind: TraceGradient, Inputs: []data.Array{{Name: "m", Rows: 1, Cols: 12, Data: m}}},
			func(r *data.PassResult) { r.Scalars["loss"] = -1 }, "negative"},
		{"unclipped gradient", clipGradReq(m, u, vt, 0.1),
			func(r *data.PassResult) {
				// 100 along U's first column ⊗ V's first row, in the tangent space:
				// the projection's norm is then at least 100 − 50·τ > 50·τ.
				for i := 0; i < traceD1; i++ {
					for j := 0; j < traceD2; j++ {
						r.Outputs[0].Data[i*traceD2+j] += 100 * u[i*traceR] * vt[j]
					}
				}
			}, "above n·τ"},
		{"missing loss", clipGradReq(m, u, vt, 0.1), func(r *data.PassResult) { delete(r.Scalars, "loss") }, "scalar loss missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Validate(data.Trace, sh, tc.req)
			require.NoError(t, err)
			res, err := s.Local(ctx, ds, tc.req)
			require.NoError(t, err)
			require.NoError(t, CheckResult(s, sh, tc.req, res))
			tc.break_(res)
			err = CheckResult(s, sh, tc.req, res)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	// The check sees only the tangent projection: a component in the
	// normal space (which the estimator projects away) is not refused.
	req := clipGradReq(m, u, vt, 0.1)
	s, err := Validate(data.Trace, sh, req)
	require.NoError(t, err)
	res, err := s.Local(ctx, ds, req)
	require.NoError(t, err)
	a := make([]float64, traceD1*traceD2)
	a[0] = 1000
	perp := floats.ScaleTo(make([]float64, len(a)), 1, a)
	floats.Sub(perp, tangentOf(u, vt).Project(a))
	floats.Add(res.Outputs[0].Data, perp)
	assert.NoError(t, CheckResult(s, sh, req, res))
}
