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

// TestBytesDecodePaths: Row and RowLess give float64(b)·scale and
// float64(b)·scale − mu bit for bit, for every byte value, through the
// assembly loop (where the CPU has it) and through the portable loop alike, at
// widths with and without a tail of fewer than eight bytes.
func TestBytesDecodePaths(t *testing.T) {
	defer func(v bool) { hasDecodeAsm = v }(hasDecodeAsm)
	paths := []bool{false}
	if hasDecodeAsm {
		paths = append(paths, true)
	}
	for _, asm := range paths {
		hasDecodeAsm = asm
		for _, w := range []int{1, 7, 8, 13, 64, 784} {
			n := (256 + w - 1) / w * 2
			b := make([]byte, n*w)
			for i := range b {
				b[i] = byte(i*37 + i/256) // every value, in many positions
			}
			mu := make([]float64, w)
			for j := range mu {
				mu[j] = 0.1*float64(j) - 3.3
			}
			for _, scale := range []float64{1, 1.0 / 255, 3.7e-5, -3e300} {
				x, err := NewBytes(n, w, b, scale)
				require.NoError(t, err)
				row, less := make([]float64, w), make([]float64, w)
				for i := range n {
					x.Row(i, row)
					x.RowLess(i, less, mu)
					for j := range w {
						want := float64(float64(b[i*w+j]) * scale) // rounded: never fused with the subtraction below
						require.Equal(t, math.Float64bits(want), math.Float64bits(row[j]), "asm %v, width %d, scale %v, (%d, %d)", asm, w, scale, i, j)
						require.Equal(t, math.Float64bits(want-mu[j]), math.Float64bits(less[j]), "asm %v, width %d, scale %v, (%d, %d)", asm, w, scale, i, j)
					}
				}
			}
		}
	}
}

// BenchmarkBytesRow decodes the rows of a 60000×784 matrix of bytes
// (Fashion-MNIST's shape) at scale 1/255, as each pass over such rows
// does; "go" is the portable path.
func BenchmarkBytesRow(b *testing.B) {
	const n, p = 60000, 784
	raw := make([]byte, n*p)
	for i := range raw {
		raw[i] = byte(i * 31)
	}
	x, err := NewBytes(n, p, raw, 1.0/255)
	require.NoError(b, err)
	row, mu := make([]float64, p), make([]float64, p)
	defer func(v bool) { hasDecodeAsm = v }(hasDecodeAsm)
	for _, asm := range []bool{false, hasDecodeAsm} {
		name := map[bool]string{false: "go", true: "asm"}[asm]
		b.Run(name, func(b *testing.B) {
			hasDecodeAsm = asm
			for b.Loop() {
				for i := range n {
					x.Row(i, row)
				}
			}
		})
		b.Run(name+"/less", func(b *testing.B) {
			hasDecodeAsm = asm
			for b.Loop() {
				for i := range n {
					x.RowLess(i, row, mu)
				}
			}
		})
	}
}
