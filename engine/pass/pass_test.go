package pass

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
)

func rowsData() *data.Dataset {
	return &data.Dataset{Kind: data.Rows, X: mat.NewDense(3, 2, []float64{3, 4, 0.3, 0.4, -1, 0})}
}

// TestRowsMomentLocal: the reference pass clips each row to the bound
// before summing, and the remote view of a data set keeps its public shape.
func TestRowsMomentLocal(t *testing.T) {
	ds := rowsData()
	res, err := Local(ds).Pass(context.Background(), data.PassRequest{Kind: RowsMoment, Params: map[string]float64{"clip": 1}})
	require.NoError(t, err)
	assert.Equal(t, int64(3), res.Records)
	sum, ok := res.Output("sum")
	require.True(t, ok)
	assert.InDeltaSlice(t, []float64{0.6 + 0.3 - 1, 0.8 + 0.4}, sum.Data, 1e-15)
	mom, _ := res.Output("moment")
	assert.InDeltaSlice(t, []float64{0.36 + 0.09 + 1, 0.48 + 0.12, 0.48 + 0.12, 0.64 + 0.16}, mom.Data, 1e-15)

	r := RemoteOf(ds, nil)
	require.NoError(t, r.CheckShape())
	assert.Equal(t, 3, r.N())
	assert.Equal(t, 2, r.P())
	assert.Nil(t, r.X)
}

// TestValidateRefuses: requests and results that break their kind are
// refused with the reason named.
func TestValidateRefuses(t *testing.T) {
	ds := rowsData()
	sh := ShapeOf(ds)
	for _, tc := range []struct {
		name string
		kind data.Kind
		req  data.PassRequest
		want string
	}{
		{"unknown kind", data.Rows, data.PassRequest{Kind: "rows.nothing"}, "unknown kind"},
		{"wrong data kind", data.Trace, data.PassRequest{Kind: RowsMoment, Params: map[string]float64{"clip": 1}}, "reads rows data"},
		{"missing parameter", data.Rows, data.PassRequest{Kind: RowsMoment}, "clip missing"},
		{"unknown parameter", data.Rows, data.PassRequest{Kind: RowsMoment, Params: map[string]float64{"clip": 1, "x": 2}}, "unknown parameter"},
		{"NaN parameter", data.Rows, data.PassRequest{Kind: RowsMoment, Params: map[string]float64{"clip": math.NaN()}}, "not finite"},
		{"negative clip", data.Rows, data.PassRequest{Kind: RowsMoment, Params: map[string]float64{"clip": -1}}, "negative"},
		{"unexpected input", data.Rows, data.PassRequest{Kind: RowsMoment, Params: map[string]float64{"clip": 1},
			Inputs: []data.Array{{Name: "m", Rows: 1, Cols: 1, Data: []float64{1}}}}, `unknown input "m"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Validate(tc.kind, sh, tc.req)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	req := data.PassRequest{Kind: RowsMoment, Params: map[string]float64{"clip": 1}}
	s, err := Validate(data.Rows, sh, req)
	require.NoError(t, err)
	good, err := s.Local(context.Background(), ds, req)
	require.NoError(t, err)
	require.NoError(t, CheckResult(s, sh, req, good))
	for _, tc := range []struct {
		name   string
		break_ func(r *data.PassResult)
		want   string
	}{
		{"record count", func(r *data.PassResult) { r.Records = 2 }, "aggregates 2 records"},
		{"missing output", func(r *data.PassResult) { r.Outputs = r.Outputs[:1] }, "outputs"},
		{"NaN output", func(r *data.PassResult) { r.Outputs[0].Data[0] = math.NaN() }, "not finite"},
		{"unclipped sum", func(r *data.PassResult) { r.Outputs[0].Data[0] = 10 }, "not clipped"},
		{"asymmetric moment", func(r *data.PassResult) { r.Outputs[1].Data[1] += 1e-9 }, "symmetric"},
		{"extra scalar", func(r *data.PassResult) { r.Scalars = map[string]float64{"loss": 1} }, `unknown scalar "loss"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := &data.PassResult{Records: good.Records}
			for _, a := range good.Outputs {
				bad.Outputs = append(bad.Outputs, data.Array{Name: a.Name, Rows: a.Rows, Cols: a.Cols, Data: append([]float64(nil), a.Data...)})
			}
			tc.break_(bad)
			err := CheckResult(s, sh, req, bad)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
