package dataio

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// npyFile builds a .npy file the way NumPy writes it: header dict padded
// with spaces to a multiple of 64 bytes and a newline.
func npyFile(major byte, descr string, fortran bool, shape []int, payload []byte) []byte {
	fo := "False"
	if fortran {
		fo = "True"
	}
	dims := make([]string, len(shape))
	for i, s := range shape {
		dims[i] = fmt.Sprint(s)
	}
	sh := strings.Join(dims, ", ")
	if len(shape) == 1 {
		sh += ","
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }", descr, fo, sh)
	pre := 10
	if major >= 2 {
		pre = 12
	}
	pad := (64 - (pre+len(dict)+1)%64) % 64
	hdr := dict + strings.Repeat(" ", pad) + "\n"
	var b bytes.Buffer
	b.WriteString(npyMagic)
	b.WriteByte(major)
	b.WriteByte(0)
	if major == 1 {
		binary.Write(&b, binary.LittleEndian, uint16(len(hdr)))
	} else {
		binary.Write(&b, binary.LittleEndian, uint32(len(hdr)))
	}
	b.WriteString(hdr)
	b.Write(payload)
	return b.Bytes()
}

// idxFile builds an IDX file.
func idxFile(typ byte, shape []int, payload []byte) []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 0, typ, byte(len(shape))})
	for _, s := range shape {
		binary.Write(&b, binary.BigEndian, uint32(s))
	}
	b.Write(payload)
	return b.Bytes()
}

// encode writes values with the given byte order and element type.
func encode(order binary.ByteOrder, v any) []byte {
	var b bytes.Buffer
	if err := binary.Write(&b, order, v); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func gz(b []byte) []byte {
	var out bytes.Buffer
	w, _ := gzip.NewWriterLevel(&out, gzip.BestSpeed)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

// writeTemp writes content to dir/name and returns the path.
func writeTemp(t testing.TB, dir, name string, content []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, content, 0o644))
	return p
}

// seq returns 0, 1, ..., n-1 scaled by s and shifted by c.
func seq(n int, s, c float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i)*s + c
	}
	return out
}

// transposeF returns the Fortran-order storage of a C-order r×c matrix.
func transposeF(x []float64, r, c int) []float64 {
	out := make([]float64, len(x))
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			out[j*r+i] = x[i*c+j]
		}
	}
	return out
}

func f32s(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

var nan = math.NaN()

// containment is SketchContainmentSample's estimate alone.
func containment(a, b []uint64) float64 {
	c, _ := SketchContainmentSample(a, b)
	return c
}

// decodeWhole reads a whole array stream through its header decoder.
func decodeWhole(header func(io.Reader, int64, int64) (*pending, error), r io.Reader, known int64) (*array, error) {
	p, err := header(r, known, -1)
	if err != nil {
		return nil, err
	}
	return p.read()
}

// matrixBuilder hashes an n×p row-major matrix of unscaled source values
// with the given side columns.
func matrixBuilder(x []float64, n, p int, sides ...sideCol) *idBuilder {
	b := newIDBuilder(sides...)
	b.addMatrix(x, n, p)
	return b
}

// tableIDBuilder hashes a CSV table (idBuilder.addTable).
func tableIDBuilder(t *table, sides ...sideCol) *idBuilder {
	b := newIDBuilder(sides...)
	b.addTable(t)
	return b
}
