package project

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/sdk"
)

// Closed-form projections of the rows (4, 0, 0) and (10, 5, 5) on e₁.
func TestTransform(t *testing.T) {
	u := sdk.ModelOutput{Name: "U", Rows: 3, Cols: 1, Value: []float64{1, 0, 0}}
	mean := sdk.ModelOutput{Name: "mean", Rows: 1, Cols: 3, Value: []float64{1, 2, 3}}
	scale := sdk.ModelOutput{Name: "feature_scale", Rows: 1, Cols: 3, Value: []float64{2, 1, 1}}
	x := mat.NewDense(2, 3, []float64{4, 0, 0, 10, 5, 5})
	for _, tc := range []struct {
		name    string
		outputs []sdk.ModelOutput
		params  map[string]string
		want    []float64
		err     string
	}{
		{"uncentred", []sdk.ModelOutput{u}, nil, []float64{4, 10}, ""},
		{"centred", []sdk.ModelOutput{u, mean}, map[string]string{"center": "private"}, []float64{3, 9}, ""},
		{"scaled and centred", []sdk.ModelOutput{u, mean, scale}, nil, []float64{1, 4}, ""},
		{"no components", nil, nil, nil, "no components"},
		{"private centre, no mean", []sdk.ModelOutput{u}, map[string]string{"center": "private"}, nil, "released none"},
		{"wrong width", []sdk.ModelOutput{{Name: "U", Rows: 2, Cols: 1, Value: []float64{1, 0}}}, nil, nil, "3 columns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			y, err := Transform(&sdk.Model{Estimator: "pca-x", Outputs: tc.outputs, Params: tc.params}, nil, x)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.False(t, sdk.IsBadRequest(err), "rows that do not fit the model are a data error")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, mat.Col(nil, 0, y.M))
		})
	}
	_, err := Transform(&sdk.Model{Estimator: "pca-x", Outputs: []sdk.ModelOutput{u}}, map[string]string{"user": "1"}, x)
	assert.True(t, sdk.IsBadRequest(err))
}
