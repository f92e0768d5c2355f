package predict

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// npyShape matches the shape of a 2-D .npy header, e.g. "'shape': (5000, 3)".
var npyShape = regexp.MustCompile(`'shape':\s*\((\d+),\s*(\d+),?\s*\)`)

// ReadNPYRow reads row `row` of a 2-D little-endian float64 C-order .npy
// matrix (the format `dplr fit` writes) without reading the other rows: it
// parses the header and reads exactly the row's bytes. It returns the row
// and the matrix's number of rows.
func ReadNPYRow(r io.ReaderAt, row int) ([]float64, int, error) {
	pre := make([]byte, 12)
	if _, err := r.ReadAt(pre, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, fmt.Errorf("npy: reading the preamble: %w", err)
	}
	if string(pre[:6]) != "\x93NUMPY" {
		return nil, 0, errors.New("npy: not a .npy file")
	}
	var hlen, off int64
	switch pre[6] {
	case 1:
		hlen, off = int64(binary.LittleEndian.Uint16(pre[8:10])), 10
	case 2, 3:
		hlen, off = int64(binary.LittleEndian.Uint32(pre[8:12])), 12
	default:
		return nil, 0, fmt.Errorf("npy: version %d not supported", pre[6])
	}
	if hlen > 1<<20 {
		return nil, 0, errors.New("npy: header too long")
	}
	h := make([]byte, hlen)
	if _, err := r.ReadAt(h, off); err != nil {
		return nil, 0, fmt.Errorf("npy: reading the header: %w", err)
	}
	hs := string(h)
	if !strings.Contains(hs, "'<f8'") || !strings.Contains(hs, "'fortran_order': False") {
		return nil, 0, errors.New("npy: want a little-endian float64 matrix in C order")
	}
	m := npyShape.FindStringSubmatch(hs)
	if m == nil {
		return nil, 0, errors.New("npy: want a 2-D matrix")
	}
	rows, err1 := strconv.Atoi(m[1])
	cols, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil || cols <= 0 || cols > 1<<20 {
		return nil, 0, errors.New("npy: bad shape")
	}
	if row < 0 || row >= rows {
		return nil, rows, fmt.Errorf("npy: row %d of %d", row, rows)
	}
	buf := make([]byte, 8*cols)
	if _, err := r.ReadAt(buf, off+hlen+int64(row)*int64(8*cols)); err != nil {
		return nil, rows, fmt.Errorf("npy: reading row %d: %w", row, err)
	}
	out := make([]float64, cols)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(buf[8*i:]))
	}
	return out, rows, nil
}
