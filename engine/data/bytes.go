package data

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Bytes is an n×p matrix kept as the bytes of its source with a common
// scale: entry (i, j) is float64(b[i·p+j])·scale, the value a float64 copy
// holds bit for bit. It serves rows decoded into a buffer its reader reuses
// (Row, or RowLess less a centre), or the whole matrix (Dense).
type Bytes struct {
	n, p  int
	b     []byte
	scale float64
}

// NewBytes returns the n×p matrix of the bytes b (row-major) times scale.
func NewBytes(n, p int, b []byte, scale float64) (*Bytes, error) {
	x := &Bytes{n: n, p: p, b: b, scale: scale}
	if err := x.check(); err != nil {
		return nil, err
	}
	return x, nil
}

// check validates the shape and that every entry is finite.
func (x *Bytes) check() error {
	switch {
	case x.n < 1 || x.p < 1 || int64(x.n)*int64(x.p) != int64(len(x.b)):
		return fmt.Errorf("rows of bytes: %d bytes for shape %d×%d", len(x.b), x.n, x.p)
	case math.IsNaN(x.scale) || math.IsInf(255*x.scale, 0):
		return fmt.Errorf("rows of bytes: scale %v leaves values that are not finite", x.scale)
	}
	return nil
}

// Dims returns the shape n×p.
func (x *Bytes) Dims() (r, c int) { return x.n, x.p }

// Row writes row i into dst (of length at least p) and returns it.
func (x *Bytes) Row(i int, dst []float64) []float64 {
	src := x.b[i*x.p : (i+1)*x.p]
	dst = dst[:len(src)]
	DecodeBytes(dst, src, x.scale)
	return dst
}

// RowLess writes row i less mu (of length p) into dst (of length at least
// p) and returns it, in one sweep: the same bits as Row then the
// subtraction.
func (x *Bytes) RowLess(i int, dst, mu []float64) []float64 {
	src := x.b[i*x.p : (i+1)*x.p]
	dst, mu = dst[:len(src)], mu[:len(src)]
	for j := decodeFast(dst, src, mu, x.scale); j < len(src); j++ {
		dst[j] = float64(float64(src[j])*x.scale) - mu[j] // rounded before the subtraction, never fused
	}
	return dst
}

// DecodeBytes sets dst[j] = float64(src[j])·scale for every byte of src
// (dst at least as long): one conversion and one rounding multiplication
// per value, with the AVX2 loop where the CPU has it.
func DecodeBytes(dst []float64, src []byte, scale float64) {
	dst = dst[:len(src)]
	for j := decodeFast(dst, src, nil, scale); j < len(src); j++ {
		dst[j] = float64(src[j]) * scale
	}
}

// Dense returns the matrix as float64.
func (x *Bytes) Dense() *mat.Dense {
	out := make([]float64, len(x.b))
	for i := range x.n {
		x.Row(i, out[i*x.p:])
	}
	return mat.NewDense(x.n, x.p, out)
}
