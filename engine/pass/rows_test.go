package pass

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/kernel"
)

// randomRows returns n×p Gaussian rows, every fifth one long.
func randomRows(n, p int, seed uint64) *data.Dataset {
	r := rand.New(rand.NewPCG(seed, 3))
	x := mat.NewDense(n, p, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < p; j++ {
			v := r.NormFloat64()
			if i%5 == 0 {
				v *= 8
			}
			x.Set(i, j, v)
		}
	}
	return &data.Dataset{Kind: data.Rows, X: x}
}

func histogramRequest(grid, center []float64) data.PassRequest {
	return RowsNormHistogramKind.EncodeRequest(&data.Remote{P: len(center)}, NormHistogramRequest{Grid: grid, Center: center})
}

// TestRowsPreprocessingPasses: the reference passes compute, row by row,
// the norm counts (a norm on a grid point in that point's cell), the
// clipped sum and the centred clipped second moment with its count of
// clipped rows.
func TestRowsPreprocessingPasses(t *testing.T) {
	ds := randomRows(400, 5, 1)
	n, p := ds.X.Dims()
	mu := []float64{0.5, -1, 0, 2, 0.25}
	ctx := context.Background()

	// Put one row exactly on a grid point: it counts in that cell.
	grid := []float64{1, 2, 4, 8, 16}
	ds.X.SetRow(1, []float64{4, 0, 0, 0, 0})
	res, err := Local(ds).Pass(ctx, histogramRequest(grid, make([]float64, p)))
	require.NoError(t, err)
	counts, _ := res.Output("counts")
	want := make([]float64, len(grid)+1)
	for i := 0; i < n; i++ {
		s := mat.Norm(ds.X.RowView(i), 2)
		k := 0
		for k < len(grid) && s > grid[k] {
			k++
		}
		want[k]++
	}
	assert.Equal(t, want, counts.Data)

	res, err = Local(ds).Pass(ctx, histogramRequest(grid, mu))
	require.NoError(t, err)
	counts, _ = res.Output("counts")
	var total float64
	for _, c := range counts.Data {
		total += c
	}
	assert.EqualValues(t, n, total)

	const c = 3.0
	res, err = Local(ds).Pass(ctx, RowsClippedSumKind.EncodeRequest(ShapeOf(ds), ClippedSumRequest{Clip: c}))
	require.NoError(t, err)
	sum, _ := res.Output("sum")
	wsum := make([]float64, p)
	for i := 0; i < n; i++ {
		row := mat.Row(nil, i, ds.X)
		f := math.Min(1, c/mat.Norm(mat.NewVecDense(p, row), 2))
		for j := range row {
			wsum[j] += f * row[j]
		}
	}
	assert.InDeltaSlice(t, wsum, sum.Data, 1e-12)

	res, err = Local(ds).Pass(ctx, RowsCentredMomentKind.EncodeRequest(ShapeOf(ds), CentredMomentRequest{Clip: c, Center: mu}))
	require.NoError(t, err)
	mom, _ := res.Output("moment")
	wm := mat.NewSymDense(p, nil)
	clipped := 0
	for i := 0; i < n; i++ {
		row := mat.NewVecDense(p, nil)
		for j := 0; j < p; j++ {
			row.SetVec(j, ds.X.At(i, j)-mu[j])
		}
		if s := row.Norm(2); s > c {
			row.ScaleVec(c/s, row)
			clipped++
		}
		wm.SymRankOne(wm, 1, row)
	}
	assert.True(t, mat.EqualApprox(wm, mat.NewDense(p, p, mom.Data), 1e-10))
	assert.EqualValues(t, clipped, res.Scalars["clipped"])

	// clip 0: unclipped, none counted.
	res, err = Local(ds).Pass(ctx, RowsCentredMomentKind.EncodeRequest(ShapeOf(ds), CentredMomentRequest{}))
	require.NoError(t, err)
	mom, _ = res.Output("moment")
	var g mat.SymDense
	g.SymOuterK(1, ds.X.T())
	assert.True(t, mat.EqualApprox(&g, mat.NewDense(p, p, mom.Data), 1e-9))
	assert.Zero(t, res.Scalars["clipped"])
}

// A non-finite row fails the histogram pass with the entry named.
func TestRowsNormHistogramNonFinite(t *testing.T) {
	ds := randomRows(10, 3, 2)
	ds.X.Set(4, 2, math.NaN())
	_, err := Local(ds).Pass(context.Background(), histogramRequest([]float64{1, 2}, make([]float64, 3)))
	assert.ErrorContains(t, err, "data row 4, column 2")
	for _, req := range []data.PassRequest{
		{Kind: RowsClippedSum, Params: map[string]float64{"clip": 1}, Inputs: []data.Array{{Name: "center", Rows: 1, Cols: 3, Data: make([]float64, 3)}}},
		{Kind: RowsCentredMoment, Params: map[string]float64{"clip": 1}, Inputs: []data.Array{{Name: "center", Rows: 1, Cols: 3, Data: make([]float64, 3)}}},
	} {
		_, err = Local(ds).Pass(context.Background(), req)
		assert.ErrorContains(t, err, "data row 4, column 2: value NaN is not finite", req.Kind)
	}
	// A row whose norm overflows: refused by the histogram (as by the
	// quantile on the rows), clipped to zero by the clipped passes (as by
	// the clipped sum and moment on the rows).
	ds.X.Set(4, 2, 1e300)
	_, err = Local(ds).Pass(context.Background(), histogramRequest([]float64{1, 2}, make([]float64, 3)))
	assert.ErrorContains(t, err, "overflows")
	res, err := Local(ds).Pass(context.Background(), data.PassRequest{Kind: RowsCentredMoment, Params: map[string]float64{"clip": 1},
		Inputs: []data.Array{{Name: "center", Rows: 1, Cols: 3, Data: make([]float64, 3)}}})
	require.NoError(t, err)
	assert.EqualValues(t, 10, res.Scalars["clipped"]+float64(countShort(ds, 1)))
}

// countShort counts the rows of norm ≤ c.
func countShort(ds *data.Dataset, c float64) int {
	n, _ := ds.X.Dims()
	k := 0
	for i := 0; i < n; i++ {
		if kernel.Norm(ds.X.RawRowView(i)) <= c {
			k++
		}
	}
	return k
}

// TestRowsPreprocessingRefuses: requests and results that break the new
// kinds' rules are refused with the reason named.
func TestRowsPreprocessingRefuses(t *testing.T) {
	ds := randomRows(50, 3, 3)
	sh := ShapeOf(ds)
	zero := make([]float64, 3)
	for _, tc := range []struct {
		name string
		req  data.PassRequest
		want string
	}{
		{"grid not increasing", histogramRequest([]float64{1, 3, 2}, zero), "strictly increasing"},
		{"grid not positive", histogramRequest([]float64{0, 1}, zero), "positive"},
		{"unknown parameter", data.PassRequest{Kind: RowsNormHistogram, Params: map[string]float64{"cells": 1},
			Inputs: []data.Array{{Name: "grid", Rows: 1, Cols: 1, Data: []float64{1}}, {Name: "center", Rows: 1, Cols: 3, Data: zero}}}, `unknown parameter "cells"`},
		{"grid of the wrong shape", data.PassRequest{Kind: RowsNormHistogram,
			Inputs: []data.Array{{Name: "grid", Rows: 2, Cols: 1, Data: []float64{1, 2}}, {Name: "center", Rows: 1, Cols: 3, Data: zero}}}, "grid is 2×1, want 1×2"},
		{"empty grid", data.PassRequest{Kind: RowsNormHistogram,
			Inputs: []data.Array{{Name: "grid", Rows: 1, Cols: 0}, {Name: "center", Rows: 1, Cols: 3, Data: zero}}}, "want 1 to 100000"},
		{"centre missing", data.PassRequest{Kind: RowsCentredMoment, Params: map[string]float64{"clip": 1}}, "inputs"},
		{"negative sum clip", data.PassRequest{Kind: RowsClippedSum, Params: map[string]float64{"clip": -1},
			Inputs: []data.Array{{Name: "center", Rows: 1, Cols: 3, Data: zero}}}, "negative"},
		{"sum centre missing", data.PassRequest{Kind: RowsClippedSum, Params: map[string]float64{"clip": 1}}, "inputs"},
		{"negative moment clip", data.PassRequest{Kind: RowsCentredMoment, Params: map[string]float64{"clip": -1},
			Inputs: []data.Array{{Name: "center", Rows: 1, Cols: 3, Data: zero}}}, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Validate(data.Rows, sh, tc.req)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	for _, tc := range []struct {
		name   string
		req    data.PassRequest
		break_ func(r *data.PassResult)
		want   string
	}{
		{"counts short of n", histogramRequest([]float64{1, 2, 4}, zero), func(r *data.PassResult) { r.Outputs[0].Data[0]-- }, "sum to"},
		{"negative count", histogramRequest([]float64{1, 2, 4}, zero), func(r *data.PassResult) { r.Outputs[0].Data[0] = -1 }, "non-negative integer"},
		{"fractional count", histogramRequest([]float64{1, 2, 4}, zero), func(r *data.PassResult) { r.Outputs[0].Data[0] += 0.5 }, "non-negative integer"},
		{"unclipped sum", data.PassRequest{Kind: RowsClippedSum, Params: map[string]float64{"clip": 1}, Inputs: []data.Array{{Name: "center", Rows: 1, Cols: 3, Data: zero}}}, func(r *data.PassResult) { r.Outputs[0].Data[0] = 51 }, "not clipped"},
		{"moment trace", data.PassRequest{Kind: RowsCentredMoment, Params: map[string]float64{"clip": 1}, Inputs: []data.Array{{Name: "center", Rows: 1, Cols: 3, Data: zero}}},
			func(r *data.PassResult) { r.Outputs[0].Data[0] = 51 }, "not clipped"},
		{"negative diagonal", data.PassRequest{Kind: RowsCentredMoment, Params: map[string]float64{"clip": 0}, Inputs: []data.Array{{Name: "center", Rows: 1, Cols: 3, Data: zero}}},
			func(r *data.PassResult) { r.Outputs[0].Data[4] = -1 }, "negative"},
		{"asymmetric moment", data.PassRequest{Kind: RowsCentredMoment, Params: map[string]float64{"clip": 1}, Inputs: []data.Array{{Name: "center", Rows: 1, Cols: 3, Data: zero}}},
			func(r *data.PassResult) { r.Outputs[0].Data[1] += 1e-9 }, "symmetric"},
		{"clipped count", data.PassRequest{Kind: RowsCentredMoment, Params: map[string]float64{"clip": 1}, Inputs: []data.Array{{Name: "center", Rows: 1, Cols: 3, Data: zero}}},
			func(r *data.PassResult) { r.Scalars["clipped"] = 51 }, "clipped"},
		{"clipped missing", data.PassRequest{Kind: RowsCentredMoment, Params: map[string]float64{"clip": 1}, Inputs: []data.Array{{Name: "center", Rows: 1, Cols: 3, Data: zero}}},
			func(r *data.PassResult) { r.Scalars = nil }, "scalar clipped missing"},
		{"fractional clipped", data.PassRequest{Kind: RowsCentredMoment, Params: map[string]float64{"clip": 1}, Inputs: []data.Array{{Name: "center", Rows: 1, Cols: 3, Data: zero}}},
			func(r *data.PassResult) { r.Scalars["clipped"] = 0.5 }, "not an integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Validate(data.Rows, sh, tc.req)
			require.NoError(t, err)
			res, err := s.Local(context.Background(), ds, tc.req)
			require.NoError(t, err)
			require.NoError(t, CheckResult(s, sh, tc.req, res))
			tc.break_(res)
			err = CheckResult(s, sh, tc.req, res)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
