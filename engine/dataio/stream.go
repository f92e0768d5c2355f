package dataio

import (
	"errors"
	"fmt"
	"io"
	"unsafe"
)

// pending is an array whose header has been read and whose payload has
// not.
type pending struct {
	what    string // "npy" or "idx", for messages
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

// streamable reports whether streamFloat64 can run: C order, and a payload
// whose size is known or bounded so that the buffer can be allocated once.
func (p *pending) streamable() bool {
	return !p.fortran && p.nbytes > 0 && (p.known >= p.nbytes || p.bound >= p.nbytes)
}

// streamStep is how many bytes the reading goroutine reads before handing
// them on.
const streamStep = 1 << 20

// streamFloat64 reads the payload in a goroutine while this goroutine
// converts the bytes read so far to float64 (times scale, C order), checks
// that they are finite and passes each converted chunk to sink, so that
// decompression overlaps with conversion and hashing. It returns the
// converted values. The caller must check streamable first.
//
// Memory grows with the data that actually arrives: the payload is read in
// blocks of streamStep bytes, and the result is allocated in full only
// when the file's size vouches for the header (a plain file); behind gzip
// it grows as growTo says, so a header claiming more than the stream
// delivers costs at most eight times what was delivered.
func (p *pending) streamFloat64(scale float64, sink func(chunk []float64) error) ([]float64, error) {
	if p.known >= 0 && p.nbytes > p.known {
		return nil, p.wrap(fmt.Errorf("%w: header declares %d data bytes but only %d are present", errTruncated, p.nbytes, p.known))
	}
	size := p.dt.size
	count := int(p.nbytes) / size
	capacity := count
	if p.known < 0 {
		capacity = min(count, 1<<16)
	}
	out := make([]float64, 0, capacity)
	blocks := make(chan []byte, 4)
	free := make(chan []byte, 6)
	stop := make(chan struct{})
	errc := make(chan error, 1)
	go p.readBlocks(blocks, free, stop, errc)
	conv := newBlockConverter(p.dt, scale)
	var failed error
	for b := range blocks {
		if failed != nil {
			continue
		}
		m := len(b) / size
		done := len(out)
		if done+m > cap(out) {
			grown := make([]float64, done, growTo(cap(out), done+m, count))
			copy(grown, out)
			out = grown
		}
		out = out[:done+m]
		chunk := out[done:]
		conv.convert(chunk, b)
		select {
		case free <- b[:cap(b)]:
		default:
		}
		if conv.lut == nil {
			if i := firstNonFinite(chunk); i >= 0 {
				a := &array{shape: p.shape}
				failed = a.nonFinite(done+i, chunk[i])
				close(stop)
				continue
			}
		}
		if err := sink(chunk); err != nil {
			failed = err
			close(stop)
			continue
		}
	}
	err := <-errc
	if failed != nil {
		return nil, failed
	}
	if err != nil {
		return nil, p.wrap(err)
	}
	if len(out) != count {
		return nil, p.wrap(errors.New("internal: incomplete conversion"))
	}
	return out, nil
}

// readBlocks reads the payload in blocks of at most streamStep bytes
// (reusing the buffers sent back on free) and sends them on blocks, which
// it closes at the end. It sends the outcome on errc: a truncation, the
// check that the stream ends there, or nil when stop closed first.
func (p *pending) readBlocks(blocks chan<- []byte, free <-chan []byte, stop <-chan struct{}, errc chan<- error) {
	defer close(blocks)
	left := p.nbytes
	for left > 0 {
		var buf []byte
		select {
		case buf = <-free:
		default:
			buf = make([]byte, streamStep)
		}
		k := min(left, streamStep)
		n, err := io.ReadFull(p.r, buf[:k])
		if err != nil {
			errc <- fmt.Errorf("%w: header declares %d data bytes but the stream ends after %d (%w)", errTruncated, p.nbytes, p.nbytes-left+int64(n), err)
			return
		}
		left -= k
		select {
		case blocks <- buf[:k]:
		case <-stop:
			errc <- nil
			return
		}
	}
	errc <- expectEOF(p.r)
}

// blockConverter converts raw blocks of one dtype to float64 times scale:
// through a lookup table for bytes (whose values are always finite), by a
// copy for native float64, by the array getter otherwise.
type blockConverter struct {
	scale    float64
	lut      *[256]float64
	nativeF8 bool
	tmp      *array
}

func newBlockConverter(dt dtype, scale float64) *blockConverter {
	c := &blockConverter{scale: scale, nativeF8: dt.kind == 'f' && dt.size == 8 && !dt.big && nativeLE, tmp: &array{dt: dt}}
	if dt.size == 1 && dt.kind == 'u' {
		c.lut = new([256]float64)
		for i := range c.lut {
			c.lut[i] = float64(i) * scale
		}
	}
	return c
}

// convert writes the values of the raw block b into chunk (one per item).
func (c *blockConverter) convert(chunk []float64, b []byte) {
	switch {
	case c.lut != nil:
		for i, v := range b {
			chunk[i] = c.lut[v]
		}
	case c.nativeF8:
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&chunk[0])), len(b)), b)
		if c.scale != 1 {
			for i := range chunk {
				chunk[i] *= c.scale
			}
		}
	default:
		c.tmp.raw = b
		get := c.tmp.getter()
		for i := range chunk {
			chunk[i] = get(i) * c.scale
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
