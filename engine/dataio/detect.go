package dataio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// Format names a file format.
type Format string

// Formats. FormatAuto detects the format from magic bytes and the file
// extension. Gzip compression is always detected from its magic bytes and
// is orthogonal to the format.
const (
	FormatAuto Format = ""
	FormatCSV  Format = "csv"
	FormatNPY  Format = "npy"
	FormatIDX  Format = "idx"
)

// ParseFormat parses a format name ("" or "auto" mean FormatAuto).
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(strings.TrimSpace(s))); f {
	case "", "auto":
		return FormatAuto, nil
	case FormatCSV, FormatNPY, FormatIDX:
		return f, nil
	case "tsv", "txt":
		return FormatCSV, nil
	}
	return "", fmt.Errorf("unknown data format %q (want csv, npy, idx or auto)", s)
}

var gzipMagic = []byte{0x1f, 0x8b}

// maxDeflateRatio bounds how many bytes one compressed byte can expand to
// (deflate's limit is about 1032:1), so that a gzip file's size bounds its
// content's.
const maxDeflateRatio = 1040

// formatFromExt guesses a format from a file name (after removing .gz).
func formatFromExt(path string) Format {
	base := strings.ToLower(filepath.Base(path))
	base = strings.TrimSuffix(base, ".gz")
	switch {
	case strings.HasSuffix(base, ".npy"):
		return FormatNPY
	case strings.HasSuffix(base, ".csv"), strings.HasSuffix(base, ".tsv"), strings.HasSuffix(base, ".txt"):
		return FormatCSV
	case strings.HasSuffix(base, ".idx"), strings.Contains(base, "-ubyte"), strings.Contains(base, ".idx1"),
		strings.Contains(base, ".idx2"), strings.Contains(base, ".idx3"), strings.Contains(base, "idx1-"),
		strings.Contains(base, "idx3-"):
		return FormatIDX
	}
	return FormatAuto
}

// formatFromMagic guesses a format from the first bytes of the
// (decompressed) content.
func formatFromMagic(head []byte) Format {
	switch {
	case bytes.HasPrefix(head, []byte(npyMagic)):
		return FormatNPY
	case isIDXMagic(head):
		return FormatIDX
	}
	return FormatAuto
}

// DetectFormat reports the format of the file at path and whether it is
// gzip-compressed, from its magic bytes and extension.
func DetectFormat(path string) (Format, bool, error) {
	src, err := openSource(path, FormatAuto)
	if err != nil {
		return "", false, err
	}
	defer src.Close()
	return src.format, src.gz, nil
}

// source is an opened data file, decompressed if needed.
type source struct {
	r     *bufio.Reader
	known int64 // bytes of content left, -1 if unknown (compressed)
	// bound is an upper bound on the content's length when known is -1
	// (deflate expands at most maxDeflateRatio-fold), or -1.
	bound  int64
	format Format
	gz     bool
	st     os.FileInfo // the file's state when opened (nil for a reader)
	closer []io.Closer
}

func (s *source) Close() error {
	var first error
	for i := len(s.closer) - 1; i >= 0; i-- {
		if err := s.closer[i].Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// header reads the header of an array source (.npy or IDX).
func (s *source) header() (*pending, error) {
	if s.format == FormatNPY {
		return decodeNPYHeader(s.r, s.known, s.bound)
	}
	return decodeIDXHeader(s.r, s.known, s.bound)
}

// openSource opens path, unwraps gzip and determines the format (override
// wins unless it is FormatAuto).
func openSource(path string, override Format) (*source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.IsDir() {
		f.Close()
		return nil, errors.New("is a directory")
	}
	src, err := openReader(f, st.Size(), path, override)
	if err != nil {
		f.Close()
		return nil, err
	}
	src.closer = append([]io.Closer{f}, src.closer...)
	src.st = st
	return src, nil
}

// openReader wraps r (known bytes long, -1 if unknown), unwraps gzip and
// determines the format from the content and the name.
func openReader(r io.Reader, known int64, name string, override Format) (*source, error) {
	src := &source{known: known, bound: -1}
	br := bufio.NewReaderSize(r, 1<<16)
	if head, _ := br.Peek(2); bytes.Equal(head, gzipMagic) {
		// klauspost/compress's gzip decoder: the same format and checks
		// (CRC-32 and size at each member's end, concatenated members) as
		// the standard library's, and inflates about 1.7× faster, which is
		// the larger part of a gzip file's first preparation.
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		src.closer = append(src.closer, gz)
		src.gz, src.known = true, -1
		if known >= 0 && known < math.MaxInt64/maxDeflateRatio {
			src.bound = known * maxDeflateRatio
		}
		br = bufio.NewReaderSize(gz, 1<<16)
	}
	src.r = br
	head, _ := br.Peek(8)
	magic := formatFromMagic(head)
	ext := formatFromExt(name)
	switch {
	case override != FormatAuto:
		src.format = override
	case magic != FormatAuto:
		src.format = magic
	case ext == FormatNPY || ext == FormatIDX:
		src.Close()
		return nil, fmt.Errorf("the name says %s but the content lacks the %s magic bytes (truncated or not that format?)", ext, ext)
	default:
		if len(head) > 0 && bytes.IndexByte(head, 0) >= 0 {
			src.Close()
			return nil, errors.New("unrecognised binary format (not CSV, .npy or IDX); set the format explicitly")
		}
		src.format = FormatCSV
	}
	return src, nil
}
