package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"unsafe"
)

// writeHeader writes a version 1.0 .npy header of an n×p little-endian
// float64 C-order array.
func writeHeader(w io.Writer, n, p int) error {
	dict := fmt.Sprintf("{'descr': '<f8', 'fortran_order': False, 'shape': (%d, %d), }", n, p)
	pad := 64 - (10+len(dict)+1)%64
	if pad == 64 {
		pad = 0
	}
	dict += strings.Repeat(" ", pad) + "\n"
	hdr := append([]byte("\x93NUMPY\x01\x00"), 0, 0)
	binary.LittleEndian.PutUint16(hdr[8:], uint16(len(dict)))
	_, err := w.Write(append(hdr, dict...))
	return err
}

func f64bytes(x []float64) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 8*len(x))
}
