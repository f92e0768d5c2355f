package dataio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"unsafe"
)

// nativeLE is true on little-endian machines, where the canonical on-disk
// byte order equals the in-memory one.
var nativeLE = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// dtype is an element type of an array file: kind 'f' (IEEE float), 'i'
// (signed integer), 'u' (unsigned integer) or 'b' (bool), its size in bytes
// and its byte order.
type dtype struct {
	kind byte
	size int
	big  bool
}

func (d dtype) String() string {
	order := "<"
	if d.size == 1 {
		order = "|"
	} else if d.big {
		order = ">"
	}
	return fmt.Sprintf("%s%c%d", order, d.kind, d.size)
}

func (d dtype) valid() bool {
	switch d.kind {
	case 'f':
		return d.size == 4 || d.size == 8
	case 'i', 'u':
		return d.size == 1 || d.size == 2 || d.size == 4 || d.size == 8
	case 'b':
		return d.size == 1
	}
	return false
}

func (d dtype) integer() bool { return d.kind == 'i' || d.kind == 'u' || d.kind == 'b' }

func (d dtype) order() binary.ByteOrder {
	if d.big {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// array is a decoded n-dimensional array: its shape, element type, storage
// order and raw bytes in the file's byte order.
type array struct {
	shape   []int
	dt      dtype
	fortran bool
	raw     []byte
}

// count returns the number of elements declared by shape, or an error if
// the product overflows.
func shapeCount(shape []int, itemsize int) (int64, error) {
	count := int64(1)
	for _, s := range shape {
		if s < 0 {
			return 0, fmt.Errorf("negative dimension %d in shape %v", s, shape)
		}
		if s != 0 && count > math.MaxInt64/int64(s) {
			return 0, fmt.Errorf("shape %v is too large", shape)
		}
		count *= int64(s)
	}
	if itemsize > 0 && count > math.MaxInt64/int64(itemsize) {
		return 0, fmt.Errorf("shape %v is too large", shape)
	}
	if count*int64(max(itemsize, 1)) > math.MaxInt {
		return 0, fmt.Errorf("shape %v is too large for this machine", shape)
	}
	return count, nil
}

// errTruncated reports a payload shorter than its header declares.
var errTruncated = errors.New("truncated")

// readPayload reads exactly n bytes from r. known is the number of bytes
// left in the source when it is known (a plain file) and -1 otherwise;
// bound, if not -1, is an upper bound on the bytes left (e.g. from a gzip
// file's compressed size): a header declaring more is refused at once.
// Behind compression the buffer grows with the data actually read, so a
// header declaring a huge shape over a short stream costs about what the
// stream holds. After the payload it requires the end of the stream
// (which also makes a gzip reader verify its checksum).
func readPayload(r io.Reader, n, known, bound int64) ([]byte, error) {
	var buf []byte
	var err error
	switch {
	case known >= 0 && n > known:
		return nil, fmt.Errorf("%w: the header implies %d data bytes but only %d are present", errTruncated, n, known)
	case known >= 0:
		buf = make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, fmt.Errorf("%w: reading %d data bytes: %w", errTruncated, n, err)
		}
	case bound >= 0 && n > bound:
		return nil, fmt.Errorf("%w: header declares %d data bytes but the compressed stream can hold at most %d", errTruncated, n, bound)
	default:
		if buf, err = io.ReadAll(io.LimitReader(r, n)); err != nil {
			return nil, fmt.Errorf("reading data after %d of %d bytes: %w", len(buf), n, err)
		}
		if int64(len(buf)) < n {
			return nil, fmt.Errorf("%w: header declares %d data bytes but the stream ends after %d", errTruncated, n, len(buf))
		}
	}
	if err := expectEOF(r); err != nil {
		return nil, err
	}
	return buf, nil
}

// expectEOF checks that r has nothing left.
func expectEOF(r io.Reader) error {
	var b [1]byte
	for range 1000 {
		m, err := r.Read(b[:])
		if m > 0 {
			return errors.New("unexpected trailing bytes after the declared data")
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading past the data: %w", err)
		}
	}
	return errors.New("reader returns no data and no end of stream")
}

// fortranMapper holds the Fortran-order strides of a shape.
type fortranMapper struct {
	shape   []int
	fstride []int
}

func newFortranMapper(shape []int) fortranMapper {
	fs := make([]int, len(shape))
	s := 1
	for i := range shape {
		fs[i] = s
		s *= shape[i]
	}
	return fortranMapper{shape: shape, fstride: fs}
}

// forEachC calls f(c, src) for every element, with c its C-order index and
// src its index in the array's storage.
func (a *array) forEachC(f func(c, src int)) {
	count := len(a.raw) / a.dt.size
	if !a.fortran || len(a.shape) < 2 {
		for k := 0; k < count; k++ {
			f(k, k)
		}
		return
	}
	m := newFortranMapper(a.shape)
	idx := make([]int, len(a.shape))
	src := 0
	for c := 0; c < count; c++ {
		f(c, src)
		// Advance the C-order multi-index (last axis fastest).
		for ax := len(idx) - 1; ax >= 0; ax-- {
			idx[ax]++
			src += m.fstride[ax]
			if idx[ax] < a.shape[ax] {
				break
			}
			src -= m.fstride[ax] * idx[ax]
			idx[ax] = 0
		}
	}
}

// float64s converts the array to float64 values in C order, checking that
// every value is finite. When the array already holds little-endian
// float64 in C order on a little-endian machine, the raw buffer is
// reinterpreted without a copy.
func (a *array) float64s() ([]float64, error) {
	count := len(a.raw) / a.dt.size
	if count == 0 {
		return []float64{}, nil
	}
	var out []float64
	switch {
	case a.fortran && len(a.shape) > 1:
		out = make([]float64, count)
		a.forEachC(func(c, src int) { out[c] = a.value(src) })
	case a.dt == dtype{kind: 'f', size: 8} && nativeLE && uintptr(unsafe.Pointer(&a.raw[0]))%8 == 0:
		out = unsafe.Slice((*float64)(unsafe.Pointer(&a.raw[0])), count)
	default:
		out = make([]float64, count)
		newBlockConverter(a.dt).convert(out, a.raw)
	}
	if i := firstNonFinite(out); i >= 0 {
		return nil, a.nonFinite(i, out[i])
	}
	return out, nil
}

// word returns the bits of element i (storage order) as an unsigned
// integer.
func (a *array) word(i int) uint64 {
	b, o := a.raw[i*a.dt.size:], a.dt.order()
	switch a.dt.size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(o.Uint16(b))
	case 4:
		return uint64(o.Uint32(b))
	}
	return o.Uint64(b)
}

// signed sign-extends a word of a signed integer dtype.
func (a *array) signed(w uint64) int64 {
	sh := 64 - 8*a.dt.size
	return int64(w<<sh) >> sh
}

// value returns element i (storage order) as float64.
func (a *array) value(i int) float64 {
	w := a.word(i)
	switch {
	case a.dt.kind == 'f' && a.dt.size == 4:
		return float64(math.Float32frombits(uint32(w)))
	case a.dt.kind == 'f':
		return math.Float64frombits(w)
	case a.dt.kind == 'i':
		return float64(a.signed(w))
	}
	return float64(w)
}

// int64s converts the array to int64 values in C order. Integer dtypes
// convert exactly (uint64 values above MaxInt64 are an error); float dtypes
// must hold integral values in the int64 range.
func (a *array) int64s() ([]int64, error) {
	out := make([]int64, len(a.raw)/a.dt.size)
	var bad error
	a.forEachC(func(c, src int) {
		switch w := a.word(src); {
		case a.dt.kind == 'f':
			v := a.value(src)
			if bad == nil && (v != math.Trunc(v) || math.Abs(v) >= 1<<63) {
				bad = fmt.Errorf("element %d: value %v is not an integer", c, v)
			}
			out[c] = int64(v)
		case a.dt.kind == 'i':
			out[c] = a.signed(w)
		default:
			if w > math.MaxInt64 && bad == nil {
				bad = fmt.Errorf("element %d: value %d does not fit in int64", c, w)
			}
			out[c] = int64(w)
		}
	})
	return out, bad
}

// nonFinite describes non-finite element c (C order) by its position.
func (a *array) nonFinite(c int, v float64) error {
	if len(a.shape) >= 2 {
		cols := 1
		for _, s := range a.shape[1:] {
			cols *= s
		}
		return fmt.Errorf("row %d, column %d: value %v is not finite", c/cols, c%cols, v)
	}
	return fmt.Errorf("element %d: value %v is not finite", c, v)
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// firstNonFinite returns the index of the first NaN or ±Inf in x, or -1.
func firstNonFinite(x []float64) int {
	for i, v := range x {
		// v-v is 0 for finite v and NaN for NaN and ±Inf.
		if v-v != 0 {
			return i
		}
	}
	return -1
}

// matrixShape interprets an array as a matrix: rank 1 is n×1, rank 2 is
// n×p and higher ranks flatten all trailing axes (n×d1×d2 → n×(d1·d2)).
func matrixShape(shape []int) (n, p int, err error) {
	switch len(shape) {
	case 0:
		return 0, 0, errors.New("a scalar (rank-0 array) is not a data matrix")
	case 1:
		return shape[0], 1, nil
	}
	p = 1
	for _, s := range shape[1:] {
		p *= s
	}
	return shape[0], p, nil
}
