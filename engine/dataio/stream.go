package dataio

import (
	"fmt"
	"io"
	"unsafe"

	"github.com/dplr/dplr/engine/data"
)

// pending is an array whose header has been read and whose payload has
// not.
type pending struct {
	what    string // "npy" or "idx", for messages
	offset  int64  // bytes from the start of the (decompressed) file to the payload
	shape   []int
	dt      dtype
	fortran bool
	r       io.Reader
	nbytes  int64
	known   int64 // bytes left in r if known, else -1
	bound   int64 // upper bound on the bytes left, else -1
}

// read reads the whole payload.
func (p *pending) read() (*array, error) {
	raw, err := readPayload(p.r, p.nbytes, p.known, p.bound)
	if err != nil {
		return nil, p.wrap(err)
	}
	return &array{shape: p.shape, dt: p.dt, fortran: p.fortran, raw: raw}, nil
}

func (p *pending) wrap(err error) error {
	return fmt.Errorf("%s (%s, shape %v): %w", p.what, p.dt, p.shape, err)
}

// streamable reports whether streamRows can read the payload: C order,
// and a payload whose size is known or bounded.
func (p *pending) streamable() bool {
	return !p.fortran && p.nbytes > 0 && (p.known >= p.nbytes || p.bound >= p.nbytes)
}

// blockConverter converts raw blocks of one dtype to float64: by
// data.DecodeBytes for unsigned bytes (whose values are always finite), by
// a copy for native float64, by the array getter otherwise.
type blockConverter struct {
	bytes    bool // unsigned bytes
	nativeF8 bool
	tmp      *array
}

func newBlockConverter(dt dtype) *blockConverter {
	return &blockConverter{bytes: dt.size == 1 && dt.kind == 'u', nativeF8: dt.kind == 'f' && dt.size == 8 && !dt.big && nativeLE, tmp: &array{dt: dt}}
}

// convert writes the values of the raw block b into chunk (one per item).
func (c *blockConverter) convert(chunk []float64, b []byte) {
	switch {
	case c.bytes:
		data.DecodeBytes(chunk, b, 1)
	case c.nativeF8:
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&chunk[0])), len(b)), b)
	default:
		c.tmp.raw = b
		for i := range chunk {
			chunk[i] = c.tmp.value(i)
		}
	}
}

// growTo returns the capacity to grow a buffer of capacity c to so that it
// holds need elements of a payload declared to hold total: it doubles,
// and jumps to total once that is at most 8·need (so memory stays within
// 8× what has arrived, and the last growth does not hold two near-full
// buffers: the old one is at most a quarter of the payload).
func growTo(c, need, total int) int {
	if need >= total/8 {
		return total
	}
	return min(max(2*c, need), total)
}
