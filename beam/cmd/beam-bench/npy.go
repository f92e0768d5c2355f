package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"unsafe"
)

// npyFile is an n×p little-endian float64 C-order .npy file being written
// row block by row block.
type npyFile struct {
	f *os.File
	// p is the number of columns, left the number of rows still to write.
	p, left int
}

// newNPY creates path with a version 1.0 header for n×p values.
func newNPY(path string, n, p int) (*npyFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	dict := fmt.Sprintf("{'descr': '<f8', 'fortran_order': False, 'shape': (%d, %d), }", n, p)
	dict += strings.Repeat(" ", (64-(10+len(dict)+1)%64)%64) + "\n"
	hdr := append([]byte("\x93NUMPY\x01\x00"), 0, 0)
	binary.LittleEndian.PutUint16(hdr[8:], uint16(len(dict)))
	if _, err := f.Write(append(hdr, dict...)); err != nil {
		f.Close()
		return nil, err
	}
	return &npyFile{f: f, p: p, left: n}, nil
}

// write appends the rows in x.
func (w *npyFile) write(x []float64) error {
	if len(x) == 0 {
		return nil
	}
	w.left -= len(x) / w.p
	_, err := w.f.Write(unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 8*len(x)))
	return err
}

// close closes the file (nil: nothing to close).
func (w *npyFile) close() error {
	if w == nil {
		return nil
	}
	return w.f.Close()
}
