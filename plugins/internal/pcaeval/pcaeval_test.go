package pcaeval

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/sdk"
)

// ExplainedRatio counts negative noisy values as 0 and refuses an empty
// total.
func TestExplainedRatio(t *testing.T) {
	for _, tc := range []struct {
		name string
		vals []float64
		rest float64
		want []float64
		ok   bool
	}{
		{"plain", []float64{3, 1}, 4, []float64{0.375, 0.125}, true},
		{"negative tail", []float64{3, 1}, -2, []float64{0.75, 0.25}, true},
		{"negative value", []float64{2, -1}, 2, []float64{0.5, 0}, true},
		{"nothing positive", []float64{-1, -2}, -3, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ExplainedRatio(tc.vals, tc.rest)
			assert.Equal(t, tc.ok, ok)
			assert.InDeltaSlice(t, tc.want, got, 1e-15)
		})
	}
}

// A first component carried by one column (or two, with p ≥ 5) gets a
// warning naming them; spread components, later components and results
// without U get none.
func TestWarnFewColumns(t *testing.T) {
	for _, tc := range []struct {
		name string
		u    *mat.Dense
		want string
	}{
		{"column 3 alone", mat.NewDense(4, 2, []float64{0.1, 0.7, 0, 0.7, -0.99, 0, 0.1, 0.1}), "component 1 is column 3 alone (98%"},
		{"columns 4 and 1 of 5", mat.NewDense(5, 1, []float64{0.6, 0.1, 0.1, 0.78, 0.1}), "component 1 is columns 4 and 1 alone (97%"},
		{"two columns of 4 are not few", mat.NewDense(4, 1, []float64{0.6, 0.1, 0.1, 0.78}), ""},
		{"spread", mat.NewDense(5, 1, []float64{0.5, 0.5, 0.5, 0.4, 0.3}), ""},
		{"only a later component is one column", mat.NewDense(3, 2, []float64{0.6, 0, 0.8, 0, 0, 1}), ""},
		{"p = 2", mat.NewDense(2, 1, []float64{1, 0}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &sdk.Result{}
			res.AddMatrix("U", tc.u, sdk.Public, "")
			WarnFewColumns(res)
			if tc.want == "" {
				assert.Empty(t, res.Warnings)
				return
			}
			require.Len(t, res.Warnings, 1)
			assert.Contains(t, res.Warnings[0], tc.want)
			assert.Contains(t, res.Warnings[0], "--column-scales")
		})
	}
	res := &sdk.Result{}
	WarnFewColumns(res)
	assert.Empty(t, res.Warnings, "no U: nothing to warn about")
}
