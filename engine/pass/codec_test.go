package pass

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
)

// codecRequest and codecResult hold one field of every wire type.
type codecRequest struct {
	Scale float64 `pass:"scale"`
	Count int     `pass:"count"`
	Seed  uint64  `pass:"seed"`
	On    bool    `pass:"on"`
	V     []float64
	X     []float64 `pass:"x"`
	codecInner
}

type codecInner struct {
	Y []float64 `pass:"y"`
}

type codecResult struct {
	Records int64
	Total   float64   `pass:"total"`
	Hits    int64     `pass:"hits"`
	Sum     []float64 `pass:"sum"`
}

// codecKind is an unregistered kind over the codec types: input x of
// Count values, y optional (1×2), output sum 1×p.
var codecKind = &Kind[codecRequest, codecResult]{
	Name: "rows.codec", Data: data.Rows,
	Inputs: func(_ *data.Remote, q *codecRequest) []ArraySpec {
		out := []ArraySpec{row("x", q.Count, "")}
		if q.Y != nil {
			out = append(out, row("y", 2, ""))
		}
		return out
	},
	Outputs: func(sh *data.Remote, _ *codecRequest) []ArraySpec { return []ArraySpec{sumOut(sh)} },
	Local: func(context.Context, *data.Dataset, *codecRequest) (*codecResult, error) {
		return nil, nil
	},
}

// TestCodec: a typed request and result survive their wire forms (untagged
// fields stay home, embedded fields travel, a nil input travels as zeros),
// and every malformed wire value is refused with its name.
func TestCodec(t *testing.T) {
	sh := &data.Remote{N: 5, P: 2}
	q := codecRequest{Scale: 0.5, Count: 2, Seed: 1 << 40, On: true, V: []float64{9}, X: []float64{1, 2}, codecInner: codecInner{Y: []float64{3, 4}}}
	req := codecKind.EncodeRequest(sh, q)
	assert.Equal(t, map[string]float64{"scale": 0.5, "count": 2, "seed": 1 << 40, "on": 1}, req.Params)
	got, err := codecKind.DecodeRequest(sh, req)
	require.NoError(t, err)
	want := q
	want.V = nil
	assert.Equal(t, want, *got)

	r := codecResult{Records: 5, Total: -1.5, Hits: 3, Sum: []float64{1, 2}}
	res := codecKind.EncodeResult(sh, got, &r)
	back, err := codecKind.DecodeResult(sh, got, res)
	require.NoError(t, err)
	assert.Equal(t, r, *back)

	nilX := codecKind.EncodeRequest(sh, codecRequest{Count: 3})
	assert.Equal(t, []data.Array{{Name: "x", Rows: 1, Cols: 3, Data: []float64{0, 0, 0}}}, nilX.Inputs)

	withParam := func(name string, v float64) data.PassRequest {
		bad := codecKind.EncodeRequest(sh, q)
		bad.Params[name] = v
		return bad
	}
	for _, tc := range []struct {
		name string
		req  data.PassRequest
		want string
	}{
		{"unknown parameter", withParam("v", 1), `unknown parameter "v"`},
		{"NaN", withParam("scale", math.NaN()), "parameter scale = NaN is not finite"},
		{"infinite", withParam("scale", math.Inf(1)), "not finite"},
		{"fractional int", withParam("count", 1.5), "parameter count = 1.5 is not an integer"},
		{"huge int", withParam("count", 1<<60), "not an integer"},
		{"negative uint", withParam("seed", -1), "parameter seed = -1 is not an integer in [0, 2⁵³)"},
		{"bool 2", withParam("on", 2), "parameter on = 2 is not 0 or 1"},
		{"missing", data.PassRequest{Kind: "rows.codec", Params: map[string]float64{"scale": 1, "count": 0, "on": 0}}, "parameter seed missing"},
		{"other kind", data.PassRequest{Kind: "rows.other"}, `a "rows.other" request`},
		{"unknown input", data.PassRequest{Kind: "rows.codec", Params: req.Params, Inputs: append(req.Inputs, data.Array{Name: "v"})}, `unknown input "v"`},
		{"input twice", data.PassRequest{Kind: "rows.codec", Params: req.Params, Inputs: []data.Array{req.Inputs[0], req.Inputs[0]}}, "input x given twice"},
		{"input shape", data.PassRequest{Kind: "rows.codec", Params: req.Params,
			Inputs: []data.Array{{Name: "x", Rows: 2, Cols: 1, Data: []float64{1, 2}}, req.Inputs[1]}}, "input x is 2×1, want 1×2"},
		{"input order", data.PassRequest{Kind: "rows.codec", Params: req.Params, Inputs: []data.Array{req.Inputs[1], req.Inputs[0]}}, `input 0 is "y", want "x"`},
		{"input not finite", data.PassRequest{Kind: "rows.codec", Params: req.Params,
			Inputs: []data.Array{{Name: "x", Rows: 1, Cols: 2, Data: []float64{1, math.Inf(-1)}}, req.Inputs[1]}}, "not finite"},
		{"input short", data.PassRequest{Kind: "rows.codec", Params: req.Params,
			Inputs: []data.Array{{Name: "x", Rows: 1, Cols: 2, Data: []float64{1}}, req.Inputs[1]}}, "1 values for 1×2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := codecKind.DecodeRequest(sh, tc.req)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	for _, tc := range []struct {
		name   string
		break_ func(r *data.PassResult)
		want   string
	}{
		{"records", func(r *data.PassResult) { r.Records = 4 }, "aggregates 4 records, want 5"},
		{"unknown scalar", func(r *data.PassResult) { r.Scalars["loss"] = 1 }, `unknown scalar "loss"`},
		{"missing scalar", func(r *data.PassResult) { delete(r.Scalars, "hits") }, "scalar hits missing"},
		{"fractional count", func(r *data.PassResult) { r.Scalars["hits"] = 0.5 }, "scalar hits = 0.5 is not an integer"},
		{"NaN scalar", func(r *data.PassResult) { r.Scalars["total"] = math.NaN() }, "not finite"},
		{"output shape", func(r *data.PassResult) { r.Outputs[0].Rows, r.Outputs[0].Cols = 2, 1 }, "output sum is 2×1, want 1×2"},
		{"output missing", func(r *data.PassResult) { r.Outputs = nil }, "0 outputs, want [sum]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := codecKind.EncodeResult(sh, got, &r)
			tc.break_(bad)
			_, err := codecKind.DecodeResult(sh, got, bad)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err = codecKind.DecodeResult(sh, got, nil)
	assert.ErrorContains(t, err, "no result")
}

// roundTrip checks that q encodes to a request its kind accepts for a data
// set of shape sh and decodes back to q.
func roundTrip[Q, R any](t *testing.T, k *Kind[Q, R], sh *data.Remote, q Q) {
	t.Helper()
	req := k.EncodeRequest(sh, q)
	_, err := Validate(k.Data, sh, req)
	require.NoError(t, err, k.Name)
	got, err := k.DecodeRequest(sh, req)
	require.NoError(t, err, k.Name)
	assert.Equal(t, q, *got, k.Name)
}

// TestRequestsRoundTrip: every registered kind's typed request survives
// its wire form.
func TestRequestsRoundTrip(t *testing.T) {
	rows := &data.Remote{N: 5, P: 3}
	c := []float64{1, 0, -2}
	roundTrip(t, RowsMomentKind, rows, MomentRequest{Clip: 2})
	roundTrip(t, RowsClippedSumKind, rows, ClippedSumRequest{Clip: 3, Center: c})
	roundTrip(t, RowsCentredMomentKind, rows, CentredMomentRequest{Clip: 1, Center: c})
	roundTrip(t, RowsNormHistogramKind, rows, NormHistogramRequest{Grid: []float64{1, 2}, Center: c})

	m, u, vt := tangentPoint(6)
	roundTrip(t, TraceMomentKind, traceShape, TraceMomentRequest{})
	roundTrip(t, TraceClippedMomentKind, traceShape, TraceClippedMomentRequest{ClipX: 2, ClipY: 0.5})
	roundTrip(t, TraceGradientKind, traceShape, TraceGradientRequest{M: m})
	roundTrip(t, TraceClippedGradientKind, traceShape, TraceClippedGradientRequest{Tau: 0.7, Rank: traceR, M: m, U: u, Vt: vt})
	roundTrip(t, TraceResponseCountsKind, traceShape, TraceResponseCountsRequest{Grid: []float64{0.5, 1}})

	const p, kp, k = 5, 3, 2
	users := &data.Remote{N: 30, P: p, Users: 4}
	base := UsersData{LocalFraction: 0.25, Holdout: 0.1, Sign: true, Proj: kp, M: orthonormal(kp*p, 1, 1), Group: []float64{1, 0, 1, 1}}
	model := UsersModel{U: orthonormal(kp, k, 3), Rank: k, Logistic: true}
	edges := []float64{0.5, 1, 2}
	rounds := UsersRounds{Batch: 2, Round: 1, Seed: 77}
	roundTrip(t, UsersUstatKind, users, UstatRequest{UsersData: base, Clip: 0.5})
	roundTrip(t, UsersUstatHistKind, users, UstatHistRequest{UsersData: base, Edges: edges})
	roundTrip(t, UsersGradientKind, users, UsersGradientRequest{UsersData: base, UsersModel: model, UsersRounds: rounds, Clip: 0.3})
	roundTrip(t, UsersGradientHistKind, users, GradientHistRequest{UsersData: base, UsersModel: model, UsersRounds: rounds, Edges: edges})
	roundTrip(t, UsersHoldoutKind, users, HoldoutRequest{UsersData: base, UsersModel: model, HeadAll: true, Heads: true})
	roundTrip(t, UsersValidationKind, users, ValidationRequest{UsersData: base, UsersModel: model, Accuracy: true})
	squared := model
	squared.Logistic = false
	roundTrip(t, UsersAltMinKind, users, AltMinRequest{UsersData: base, UsersModel: squared, ClipW: 0.5, ClipY: 2, Portion: 4})
	whole := base
	whole.Proj, whole.M, whole.Group = 0, nil, nil
	roundTrip(t, UsersUstatKind, users, UstatRequest{UsersData: whole})
}

// TestAddResults: partial results add up to the whole (records, outputs,
// scalars).
func TestAddResults(t *testing.T) {
	a := data.PassResult{Records: 2, Outputs: []data.Array{{Name: "sum", Rows: 1, Cols: 2, Data: []float64{1, 2}}}, Scalars: map[string]float64{"loss": 1, "clipped": 0}}
	b := data.PassResult{Records: 3, Outputs: []data.Array{{Name: "sum", Rows: 1, Cols: 2, Data: []float64{10, 20}}}, Scalars: map[string]float64{"loss": 2, "clipped": 1}}
	AddResults(&a, b)
	assert.Equal(t, data.PassResult{Records: 5, Outputs: []data.Array{{Name: "sum", Rows: 1, Cols: 2, Data: []float64{11, 22}}}, Scalars: map[string]float64{"loss": 3, "clipped": 1}}, a)
}
