package dataio

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"gonum.org/v1/gonum/mat"
)

// npyMagic starts every .npy file.
const npyMagic = "\x93NUMPY"

// maxNPYHeader bounds the header length we accept (NumPy itself writes a
// few hundred bytes at most).
const maxNPYHeader = 1 << 20

// npyHeader is the parsed header of a .npy file.
type npyHeader struct {
	major, minor byte
	dt           dtype
	fortran      bool
	shape        []int
	dataOffset   int64 // bytes from the start of the file to the data
}

// readNPYHeader parses a .npy header from r.
func readNPYHeader(r io.Reader) (npyHeader, error) {
	var h npyHeader
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return h, fmt.Errorf("npy: truncated header: %w", err)
	}
	if string(pre[:6]) != npyMagic {
		return h, errors.New("npy: bad magic (not a .npy file)")
	}
	h.major, h.minor = pre[6], pre[7]
	var hlen int64
	switch h.major {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return h, fmt.Errorf("npy: truncated header length: %w", err)
		}
		hlen = int64(binary.LittleEndian.Uint16(b[:]))
		h.dataOffset = 10 + hlen
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return h, fmt.Errorf("npy: truncated header length: %w", err)
		}
		hlen = int64(binary.LittleEndian.Uint32(b[:]))
		h.dataOffset = 12 + hlen
	default:
		return h, fmt.Errorf("npy: unsupported format version %d.%d", h.major, h.minor)
	}
	if hlen > maxNPYHeader {
		return h, fmt.Errorf("npy: header length %d is implausibly large", hlen)
	}
	text := make([]byte, hlen)
	if _, err := io.ReadFull(r, text); err != nil {
		return h, fmt.Errorf("npy: truncated header (%d bytes declared): %w", hlen, err)
	}
	if err := h.parseDict(string(text)); err != nil {
		return h, fmt.Errorf("npy: header %q: %w", strings.TrimSpace(string(text)), err)
	}
	return h, nil
}

// parseDict parses the Python dict literal of a .npy header, e.g.
// {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }.
func (h *npyHeader) parseDict(s string) error {
	p := &pyParser{s: s}
	if !p.eat('{') {
		return errors.New("expected '{'")
	}
	seen := map[string]bool{}
	for {
		if p.eat('}') {
			break
		}
		key, err := p.str()
		if err != nil {
			return fmt.Errorf("dict key: %w", err)
		}
		if !p.eat(':') {
			return fmt.Errorf("expected ':' after %q", key)
		}
		if seen[key] {
			return fmt.Errorf("duplicate key %q (which value counts is ambiguous)", key)
		}
		switch key {
		case "descr":
			d, err := p.str()
			if err != nil {
				return fmt.Errorf("descr: %w (structured dtypes are not supported)", err)
			}
			if h.dt, err = parseDescr(d); err != nil {
				return err
			}
		case "fortran_order":
			w := p.word()
			switch w {
			case "True":
				h.fortran = true
			case "False":
				h.fortran = false
			default:
				return fmt.Errorf("fortran_order: expected True or False, got %q", w)
			}
		case "shape":
			if h.shape, err = p.tuple(); err != nil {
				return fmt.Errorf("shape: %w", err)
			}
		default:
			return fmt.Errorf("unexpected key %q", key)
		}
		seen[key] = true
		if !p.eat(',') {
			if !p.eat('}') {
				return errors.New("expected ',' or '}'")
			}
			break
		}
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return fmt.Errorf("missing key %q", k)
		}
	}
	return nil
}

// parseDescr parses a NumPy dtype string such as "<f8" or "|u1".
func parseDescr(d string) (dtype, error) {
	var dt dtype
	if len(d) < 3 {
		return dt, fmt.Errorf("unsupported dtype %q", d)
	}
	switch d[0] {
	case '<':
	case '>':
		dt.big = true
	case '|':
	case '=':
		dt.big = !nativeLE
	default:
		return dt, fmt.Errorf("unsupported dtype %q (unknown byte order)", d)
	}
	dt.kind = d[1]
	size, err := strconv.Atoi(d[2:])
	if err != nil {
		return dt, fmt.Errorf("unsupported dtype %q", d)
	}
	dt.size = size
	if !dt.valid() {
		return dt, fmt.Errorf("unsupported dtype %q (want float32/64, (u)int8/16/32/64 or bool)", d)
	}
	if dt.size == 1 {
		dt.big = false
	}
	return dt, nil
}

// pyParser is a tiny scanner for the subset of Python literals used by
// .npy headers.
type pyParser struct {
	s string
	i int
}

func (p *pyParser) skip() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *pyParser) eat(c byte) bool {
	p.skip()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *pyParser) str() (string, error) {
	p.skip()
	if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", errors.New("expected a quoted string")
	}
	q := p.s[p.i]
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", errors.New("unterminated string")
	}
	v := p.s[p.i+1 : p.i+1+end]
	p.i += end + 2
	return v, nil
}

func (p *pyParser) word() string {
	p.skip()
	j := p.i
	for j < len(p.s) && (p.s[j] >= 'a' && p.s[j] <= 'z' || p.s[j] >= 'A' && p.s[j] <= 'Z' || p.s[j] >= '0' && p.s[j] <= '9') {
		j++
	}
	w := p.s[p.i:j]
	p.i = j
	return w
}

func (p *pyParser) tuple() ([]int, error) {
	if !p.eat('(') {
		return nil, errors.New("expected '('")
	}
	shape := []int{}
	for {
		if p.eat(')') {
			return shape, nil
		}
		w := strings.TrimSuffix(p.word(), "L")
		v, err := strconv.ParseInt(w, 10, 64)
		if err != nil || v < 0 || v > math.MaxInt32*int64(1<<16) {
			return nil, fmt.Errorf("bad dimension %q", w)
		}
		shape = append(shape, int(v))
		if len(shape) > 32 {
			return nil, errors.New("more than 32 dimensions")
		}
		if !p.eat(',') {
			if !p.eat(')') {
				return nil, errors.New("expected ',' or ')'")
			}
			return shape, nil
		}
	}
}

// decodeNPYHeader reads a .npy header and returns the pending payload.
func decodeNPYHeader(r io.Reader, known, bound int64) (*pending, error) {
	h, err := readNPYHeader(r)
	if err != nil {
		return nil, err
	}
	count, err := shapeCount(h.shape, h.dt.size)
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	if known >= 0 {
		known -= h.dataOffset
	}
	if bound >= 0 {
		bound = max(bound-h.dataOffset, 0)
	}
	return &pending{what: "npy", offset: h.dataOffset, shape: h.shape, dt: h.dt, fortran: h.fortran, r: r, nbytes: count * int64(h.dt.size), known: known, bound: bound}, nil
}

// npyHeaderBytes returns a version 1.0 header (or 2.0 if it does not fit)
// padded so that the data starts at a multiple of 64 bytes.
func npyHeaderBytes(descr string, shape []int) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	tuple := strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, tuple)
	b := []byte(npyMagic + "\x01\x00\x00\x00") // version 1.0, then the length (2 bytes)
	if len(dict)+11 > math.MaxUint16 {
		b = []byte(npyMagic + "\x02\x00\x00\x00\x00\x00") // version 2.0: 4 bytes
	}
	pad := (64 - (len(b)+len(dict)+1)%64) % 64
	if hlen := len(dict) + pad + 1; b[6] == 1 {
		binary.LittleEndian.PutUint16(b[8:], uint16(hlen))
	} else {
		binary.LittleEndian.PutUint32(b[8:], uint32(hlen))
	}
	return append(append(b, dict+strings.Repeat(" ", pad)...), '\n')
}

// SaveNPY writes m as a two-dimensional float64 C-order .npy file at
// path, atomically (a temporary file in the same directory renamed into
// place).
func SaveNPY(path string, m mat.Matrix) error {
	if m == nil {
		return errors.New("write npy: nil matrix")
	}
	r, c := m.Dims()
	d, ok := m.(*mat.Dense)
	if !ok || d.RawMatrix().Stride != c {
		d = mat.DenseCopyOf(m)
	}
	return SaveNPYFloat64(path, []int{r, c}, d.RawMatrix().Data[:r*c])
}

// SaveNPYFloat64 writes data with the given shape as a float64
// little-endian C-order .npy file at path, atomically. The product of
// shape must equal len(data).
func SaveNPYFloat64(path string, shape []int, data []float64) error {
	count, err := shapeCount(shape, 8)
	if err != nil {
		return fmt.Errorf("write npy: %w", err)
	}
	if count != int64(len(data)) {
		return fmt.Errorf("write npy: shape %v holds %d values, got %d", shape, count, len(data))
	}
	return WriteFileAtomic(path, func(w io.Writer) error {
		w.Write(npyHeaderBytes("<f8", shape)) // a write error sticks in the buffered writer
		return writeLE(w, data)
	})
}

// SaveNPYInt64 writes v as a one-dimensional int64 little-endian .npy file
// at path, atomically.
func SaveNPYInt64(path string, v []int64) error {
	return WriteFileAtomic(path, func(w io.Writer) error {
		w.Write(npyHeaderBytes("<i8", []int{len(v)}))
		return writeLE(w, v)
	})
}

// WriteFileAtomic writes the file at path through write, atomically: into a
// temporary file in the same directory, renamed into place once complete
// (removed on failure).
func WriteFileAtomic(path string, write func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 64<<10)
	if err = write(bw); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err = bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("rename into %s: %w", path, err)
	}
	return nil
}

// writeLE writes v as little-endian 8-byte words.
func writeLE[T float64 | int64](w io.Writer, v []T) error {
	if len(v) == 0 {
		return nil
	}
	if nativeLE {
		_, err := w.Write(unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 8*len(v)))
		return err
	}
	buf := make([]byte, 0, 8*min(len(v), 8192))
	for len(v) > 0 {
		k := min(len(v), 8192)
		buf = buf[:0]
		for i := range v[:k] {
			buf = binary.LittleEndian.AppendUint64(buf, *(*uint64)(unsafe.Pointer(&v[i])))
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
		v = v[k:]
	}
	return nil
}
