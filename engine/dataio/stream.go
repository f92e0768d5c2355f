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
func (p *pending) streamFloat64(scale float64, sink func(chunk []float64) error) ([]float64, error) {
	if p.known >= 0 && p.nbytes > p.known {
		return nil, p.wrap(fmt.Errorf("%w: header declares %d data bytes but only %d are present", errTruncated, p.nbytes, p.known))
	}
	size := p.dt.size
	raw := make([]byte, p.nbytes)
	count := int(p.nbytes) / size
	var out []float64
	inPlace := p.dt.kind == 'f' && size == 8 && !p.dt.big && nativeLE && uintptr(unsafe.Pointer(&raw[0]))%8 == 0
	if inPlace {
		out = unsafe.Slice((*float64)(unsafe.Pointer(&raw[0])), count)
	} else {
		out = make([]float64, count)
	}
	progress := make(chan int, 8)
	stop := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		defer close(progress)
		filled := 0
		for filled < len(raw) {
			end := min(filled+streamStep, len(raw))
			n, err := io.ReadFull(p.r, raw[filled:end])
			filled += n
			if err != nil {
				errc <- fmt.Errorf("%w: header declares %d data bytes but the stream ends after %d (%w)", errTruncated, len(raw), filled, err)
				return
			}
			select {
			case progress <- filled:
			case <-stop:
				errc <- nil
				return
			}
		}
		errc <- expectEOF(p.r)
	}()
	var lut *[256]float64
	if size == 1 && p.dt.kind == 'u' {
		lut = new([256]float64)
		for i := range lut {
			lut[i] = float64(i) * scale
		}
	}
	tmp := &array{dt: p.dt}
	done := 0 // elements converted
	var failed error
	for filled := range progress {
		if failed != nil {
			continue
		}
		upto := filled / size
		chunk := out[done:upto]
		switch {
		case lut != nil:
			for i, b := range raw[done:upto] {
				chunk[i] = lut[b]
			}
		case inPlace:
			if scale != 1 {
				for i := range chunk {
					chunk[i] *= scale
				}
			}
		default:
			tmp.raw = raw[done*size : upto*size]
			get := tmp.getter()
			for i := range chunk {
				chunk[i] = get(i) * scale
			}
		}
		if lut == nil {
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
		done = upto
	}
	err := <-errc
	if failed != nil {
		return nil, failed
	}
	if err != nil {
		return nil, p.wrap(err)
	}
	if done != count {
		return nil, p.wrap(errors.New("internal: incomplete conversion"))
	}
	return out, nil
}
