package data

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Bytes is an n×p matrix kept as the bytes of its source with a common
// scale: entry (i, j) is float64(b[i·p+j])·scale, the value a float64 copy
// holds bit for bit. It serves rows decoded into a buffer its reader reuses
// (Row), or the whole matrix (Dense).
type Bytes struct {
	n, p  int
	b     []byte
	scale float64
	lut   [256]float64 // float64(b)·scale for each byte b
}

// NewBytes returns the n×p matrix of the bytes b (row-major) times scale.
func NewBytes(n, p int, b []byte, scale float64) (*Bytes, error) {
	x := &Bytes{n: n, p: p, b: b, scale: scale}
	if err := x.check(); err != nil {
		return nil, err
	}
	for i := range x.lut {
		x.lut[i] = float64(i) * scale
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
	for j, v := range src {
		dst[j] = x.lut[v]
	}
	return dst
}

// Dense returns the matrix as float64.
func (x *Bytes) Dense() *mat.Dense {
	out := make([]float64, len(x.b))
	for i, v := range x.b {
		out[i] = x.lut[v]
	}
	return mat.NewDense(x.n, x.p, out)
}
