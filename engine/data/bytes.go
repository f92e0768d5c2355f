package data

import (
	"encoding/binary"
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

// Row writes row i into dst (of length at least p) and returns it. It
// reads the bytes eight at a time (one load instead of eight).
func (x *Bytes) Row(i int, dst []float64) []float64 {
	src := x.b[i*x.p : (i+1)*x.p]
	dst = dst[:len(src)]
	j := 0
	for ; j+8 <= len(src); j += 8 {
		w, d := binary.LittleEndian.Uint64(src[j:]), dst[j:j+8:j+8]
		d[0], d[1], d[2], d[3] = x.lut[byte(w)], x.lut[byte(w>>8)], x.lut[byte(w>>16)], x.lut[byte(w>>24)]
		d[4], d[5], d[6], d[7] = x.lut[byte(w>>32)], x.lut[byte(w>>40)], x.lut[byte(w>>48)], x.lut[byte(w>>56)]
	}
	for ; j < len(src); j++ {
		dst[j] = x.lut[src[j]]
	}
	return dst
}

// RowBytes returns the bytes of row i and the table of their values:
// entry (i, j) is table[RowBytes(i)[j]] (kernels read them undecoded).
func (x *Bytes) RowBytes(i int) ([]byte, *[256]float64) {
	return x.b[i*x.p : (i+1)*x.p : (i+1)*x.p], &x.lut
}

// Dense returns the matrix as float64.
func (x *Bytes) Dense() *mat.Dense {
	out := make([]float64, len(x.b))
	for i := range x.n {
		x.Row(i, out[i*x.p:])
	}
	return mat.NewDense(x.n, x.p, out)
}
