package dataio

import (
	"context"
	"fmt"
	"io"
	"os"
	"unsafe"

	"github.com/dplr/dplr/engine/data"
)

// RowFile is a plain (uncompressed) C-order .npy or IDX file of rows data
// whose payload can be read in independent ranges of whole rows: the
// splits of a distributed reader. SplitRows parses its header once; each
// range is then read on its own by ReadRange. The fields are exported for
// serialisation only.
type RowFile struct {
	// Path is the file.
	Path string
	// N and P are the number of rows and of values per row.
	N, P int
	// Offset is where the payload starts; Size is the file's size.
	Offset, Size int64
	// DType is the element type as a .npy descr ("<f8", "|u1", ">i4").
	DType string
	// Shape is the array's shape, What "npy" or "idx" (for messages).
	Shape []int
	What  string
	// State is the file's state when its header was read (through the
	// descriptor read). When it is trusted, ReadRange reads a range only
	// from the file in that state, before and after the read: the rows
	// are then those of the content the state names.
	State FileState
}

// SplitRows parses the header of the file at path read as rows data with
// opt. ok is false, with no error, when the file cannot be read in ranges
// (CSV, compressed, Fortran order, a payload of another size than the
// header declares, side files or column options): Load reads it whole,
// with its messages.
func SplitRows(path string, opt LoadOptions) (f RowFile, ok bool, err error) {
	if opt.kind() != data.Rows || opt.LabelColumn != "" || len(opt.FeatureColumns) > 0 || len(opt.ColumnScales) > 0 || opt.LabelsPath != "" {
		return f, false, nil
	}
	src, p, n, cols, err := streamHeader(path, opt)
	if src == nil || err != nil {
		return f, false, err
	}
	defer src.Close()
	if src.gz || src.st == nil || !src.st.Mode().IsRegular() || p.known != p.nbytes {
		return f, false, nil
	}
	return RowFile{Path: path, N: n, P: cols, Offset: p.offset, Size: src.st.Size(), DType: p.dt.String(), Shape: p.shape, What: p.what,
		State: StateOf(path, src.st)}, true, nil
}

// ReadRange reads rows [lo, hi) of f into x ((hi−lo)·P values,
// row-major, unscaled), checking that they are finite with Load's
// messages, from the file in the state f.State records if it is trusted
// (the descriptor read is in that state before and after the read; else
// an error wrapping ErrFileChanged). When id is not nil the rows are added to it, as
// LoadIdentityParts hashes them: the parts of a file's ranges merge into
// the file's.
func (f RowFile) ReadRange(ctx context.Context, lo, hi int, id *IdentityParts, x []float64) error {
	dt, err := parseDescr(f.DType)
	if err != nil || lo < 0 || hi > f.N || lo > hi || f.P < 1 || len(x) != (hi-lo)*f.P {
		return fmt.Errorf("%s: bad range [%d, %d) of %d rows (%v)", f.Path, lo, hi, f.N, err)
	}
	file, err := os.Open(f.Path)
	if err != nil {
		return err
	}
	defer file.Close()
	if err := f.checkState(file); err != nil {
		return err
	}
	rowBytes := int64(f.P * dt.size)
	r := io.NewSectionReader(file, f.Offset+int64(lo)*rowBytes, int64(hi-lo)*rowBytes)
	conv, arr := newBlockConverter(dt), &array{shape: f.Shape}
	var b *idBuilder
	if id != nil {
		b = &idBuilder{rows: id.Rows, sum: id.Sum, sk: sketcher{vals: id.Heap}}
	}
	block := max(1, streamBlockBytes/(8*f.P))
	var raw, buf []byte
	for row := lo; row < hi; row += block {
		if err := ctx.Err(); err != nil {
			return err
		}
		k := min(block, hi-row)
		u := x[(row-lo)*f.P : (row-lo+k)*f.P]
		if conv.nativeF8 { // the file's bytes are the values
			raw = unsafe.Slice((*byte)(unsafe.Pointer(&u[0])), 8*len(u))
		} else {
			if int64(cap(buf)) < int64(k)*rowBytes {
				buf = make([]byte, int64(block)*rowBytes)
			}
			raw = buf[:int64(k)*rowBytes]
		}
		if _, err := io.ReadFull(r, raw); err != nil {
			return fmt.Errorf("%s: %s: reading rows %d to %d: %w", f.Path, f.What, row, row+k, err)
		}
		if !conv.nativeF8 {
			conv.convert(u, raw)
		}
		if i := firstNonFinite(u); i >= 0 {
			return fmt.Errorf("%s: %w", f.Path, arr.nonFinite(row*f.P+i, u[i]))
		}
		for j := 0; b != nil && j < k; j++ {
			b.row(row+j, u[j*f.P:(j+1)*f.P], nil)
		}
	}
	if err := f.checkState(file); err != nil {
		return err
	}
	if b != nil {
		*id = b.parts()
	}
	return nil
}

// checkState checks that file, open on f, is in the state f records (its
// size alone when the state is not trusted).
func (f RowFile) checkState(file *os.File) error {
	st, err := file.Stat()
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", f.Path, err)
	case st.Size() != f.Size:
		return fmt.Errorf("%s: the file changed while it was read (%d bytes, %d when its header was read): %w", f.Path, st.Size(), f.Size, ErrFileChanged)
	case f.State.Trusted() && StateOf(f.Path, st) != f.State:
		return fmt.Errorf("%s: %w", f.Path, ErrFileChanged)
	}
	return nil
}
