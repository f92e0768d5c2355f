package kernel

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		name       string
		x          []float64
		clip       float64
		wantFactor float64
		wantShrunk bool
	}{
		{"inside", []float64{3, 4}, 10, 1, false},
		{"on the boundary", []float64{3, 4}, 5, 1, false},
		{"outside", []float64{3, 4}, 2.5, 0.5, true},
		{"no clip", []float64{3, 4}, 0, 1, false},
		{"infinite clip", []float64{3, 4}, math.Inf(1), 1, false},
		{"rounding only", []float64{3 * (1 + 1e-12), 4}, 5, 5 / math.Hypot(3*(1+1e-12), 4), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.wantFactor, ClipFactor(tc.x, tc.clip), 1e-15)
			x := append([]float64(nil), tc.x...)
			assert.Equal(t, tc.wantShrunk, Shrink(x, tc.clip))
			assert.InDelta(t, Norm(tc.x)*tc.wantFactor, Norm(x), 1e-12, "a shrunk record has the clipped norm")
		})
	}
	assert.InDelta(t, 5, math.Sqrt(sqNorm([]float64{4, 6}, []float64{1, 2})), 1e-15)
	assert.InDelta(t, 5, math.Sqrt(sqNorm([]float64{3, 4}, nil)), 1e-15)
}

// Shrink scales x in place to norm clip when it is longer (clip ≤ 0 or
// +Inf: unchanged), and reports whether it was longer by more than
// rounding (CountSlack).
func Shrink(x []float64, clip float64) bool { return shrink(x, sqNorm(x, nil), clip) }
