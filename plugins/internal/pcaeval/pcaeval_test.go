package pcaeval

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
