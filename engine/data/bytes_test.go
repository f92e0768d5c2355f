package data

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBytes: rows of bytes read as float64(b)·scale, row by row and whole
// alike, and count as the rows of a rows data set; a shape that does not
// fit the bytes and a scale under which a byte overflows are refused.
func TestBytes(t *testing.T) {
	b := make([]byte, 5003)
	for i := range b {
		b[i] = byte(i * 7)
	}
	for _, w := range []int{5, 21} { // 21: two loads of eight bytes and five single bytes per row
		for _, scale := range []float64{1, 1.0 / 255, -3e300} {
			x, err := NewBytes(len(b)/w, w, b[:len(b)/w*w], scale)
			require.NoError(t, err)
			d := x.Dense()
			row := make([]float64, w)
			for i := 0; i < len(b)/w; i += 97 {
				for j, v := range x.Row(i, row) {
					want := float64(b[i*w+j]) * scale
					require.Equal(t, math.Float64bits(want), math.Float64bits(v))
					require.Equal(t, math.Float64bits(want), math.Float64bits(d.At(i, j)))
				}
			}
			ds := &Dataset{Kind: Rows, XBytes: x}
			require.NoError(t, ds.Validate())
			assert.Equal(t, [2]int{len(b) / w, w}, [2]int{ds.N(), ds.P()})
			assert.Equal(t, d, ds.WithDenseX().X)
			assert.Error(t, (&Dataset{Kind: Trace, XBytes: x, D1: 1, D2: w, Y: make([]float64, ds.N())}).CheckShape(), "only rows data is held as bytes")
		}
	}
	for _, c := range []struct {
		n, p  int
		scale float64
	}{{2, 3, 1}, {0, 0, 1}, {1, 5, math.NaN()}, {1, 5, math.MaxFloat64}} {
		_, err := NewBytes(c.n, c.p, b[:5], c.scale)
		assert.Error(t, err, "%d×%d scale %v", c.n, c.p, c.scale)
	}
}
