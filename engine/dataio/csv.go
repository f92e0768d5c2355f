package dataio

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// HeaderMode says whether the first CSV record is a header.
type HeaderMode string

// Header modes.
const (
	// HeaderAuto detects a header: the first record is a header when some
	// column holds a non-number in the first record and a number in the
	// second (or, for a one-record file, when any field is not a number).
	// A first field starting with '#' (as numpy.savetxt writes) also marks a
	// header.
	HeaderAuto HeaderMode = ""
	// HeaderYes forces the first record to be a header.
	HeaderYes HeaderMode = "yes"
	// HeaderNo forces the first record to be data.
	HeaderNo HeaderMode = "no"
)

// table is a parsed CSV file: numeric columns in a row-major matrix and
// text columns kept as strings.
type table struct {
	header []string // nil without a header
	ncol   int
	nrow   int
	vals   []float64 // nrow×ncol, row-major; text columns hold 0
	text   map[int][]string
	// hidden is a first record that a forced header (HeaderYes) removed
	// although it reads as data; nil otherwise.
	hidden []string
}

// csvConfig configures readCSV.
type csvConfig struct {
	delim  rune
	header HeaderMode
	// textCols returns the columns to keep as text (e.g. user ids), given
	// the header (nil if none) and the number of columns.
	textCols func(header []string, ncol int) ([]int, error)
	// maxRecord bounds the bytes of one record (0: DefaultMaxRecordBytes).
	maxRecord int64
	// maxBytes bounds the memory the parsed table takes (0: no bound).
	maxBytes int64
}

// DefaultMaxRecordBytes is the default bound on the length of one CSV
// record (LoadOptions.MaxRecordBytes).
const DefaultMaxRecordBytes = 16 << 20

// errRecordTooLong reports a CSV record longer than the bound.
var errRecordTooLong = errors.New("record too long")

// recordBound is a reader that fails once more than limit bytes have been
// read; readCSV moves the limit forward after each record, so it bounds the
// length of every record (quoted fields spanning lines included) without
// bounding the file.
type recordBound struct {
	r          io.Reader
	pos, limit int64
}

func (b *recordBound) Read(p []byte) (int, error) {
	if b.pos >= b.limit {
		return 0, errRecordTooLong
	}
	if int64(len(p)) > b.limit-b.pos {
		p = p[:b.limit-b.pos]
	}
	n, err := b.r.Read(p)
	b.pos += int64(n)
	return n, err
}

func isNumber(s string) bool {
	_, err := parseNumber(strings.TrimSpace(s))
	return err == nil || errors.Is(err, strconv.ErrRange)
}

// errAmbiguousNumber marks a field that Go's parser would accept but that
// other readers do not read the same way: digit separators ("1_000") and
// hexadecimal floats ("0x1p3").
var errAmbiguousNumber = errors.New("ambiguous number")

// parseNumber parses a decimal number. It refuses the forms that
// strconv.ParseFloat accepts beyond plain decimal notation (underscores
// and hexadecimal mantissas), which a spreadsheet or NumPy would read
// differently or not at all.
func parseNumber(s string) (float64, error) {
	if strings.IndexByte(s, '_') >= 0 {
		return 0, fmt.Errorf("%w: %q has an underscore (write 1000, not 1_000)", errAmbiguousNumber, s)
	}
	t := strings.TrimLeft(s, "+-")
	if len(t) >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') {
		return 0, fmt.Errorf("%w: %q is a hexadecimal float (write it in decimal)", errAmbiguousNumber, s)
	}
	return strconv.ParseFloat(s, 64)
}

// parseFinite parses a trimmed field as a finite number.
func parseFinite(f string) (float64, bool) {
	v, err := parseNumber(strings.TrimSpace(f))
	return v, err == nil && isFinite(v)
}

// autoHeader reports whether the header detection of HeaderAuto takes
// first (followed by second, nil if none) for a header.
func autoHeader(first, second []string) bool {
	if strings.HasPrefix(strings.TrimSpace(first[0]), "#") {
		return true
	}
	for j, f := range first {
		if isNumber(f) {
			continue
		}
		if second == nil || (j < len(second) && isNumber(second[j])) {
			return true
		}
	}
	return false
}

// readCSV parses a delimited text file of numbers. Every record must have
// the same number of fields; every numeric field must be a finite number.
func readCSV(r io.Reader, cfg csvConfig) (*table, error) {
	maxRecord := cfg.maxRecord
	if maxRecord <= 0 {
		maxRecord = DefaultMaxRecordBytes
	}
	// csv.Reader reads ahead through its own 4 KiB buffer.
	const slack = 4096
	rb := &recordBound{r: r, limit: maxRecord + slack}
	tooLong := func(err error) error {
		if errors.Is(err, errRecordTooLong) {
			return fmt.Errorf("csv: a record is longer than %s, the limit (LoadOptions.MaxRecordBytes); is this a CSV file?", FormatBytes(maxRecord))
		}
		return fmt.Errorf("csv: %w", err)
	}
	cr := csv.NewReader(rb)
	if cfg.delim != 0 {
		cr.Comma = cfg.delim
	}
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = false
	first, err := cr.Read()
	if err == io.EOF {
		return nil, errors.New("csv: empty file")
	}
	if err != nil {
		return nil, tooLong(err)
	}
	rb.limit = cr.InputOffset() + maxRecord + slack
	cr.ReuseRecord = true
	firstLine, _ := cr.FieldPos(0)
	var second []string
	secondLine := 0
	rec, err := cr.Read()
	switch {
	case err == io.EOF:
	case err != nil:
		return nil, tooLong(err)
	default:
		rb.limit = cr.InputOffset() + maxRecord + slack
		second = append([]string(nil), rec...)
		secondLine, _ = cr.FieldPos(0)
	}
	hasHeader := false
	switch cfg.header {
	case HeaderYes:
		hasHeader = true
	case HeaderNo:
	case HeaderAuto:
		hasHeader = autoHeader(first, second)
	default:
		return nil, fmt.Errorf("csv: unknown header mode %q (want yes, no or empty for auto)", cfg.header)
	}
	t := &table{ncol: len(first), text: map[int][]string{}}
	if hasHeader && !autoHeader(first, second) {
		// A forced header over what reads as data: the record is hidden
		// from the view but still part of the source's identity.
		t.hidden = first
	}
	if hasHeader {
		t.header = make([]string, len(first))
		for j, f := range first {
			f = strings.TrimSpace(f)
			if j == 0 {
				f = strings.TrimSpace(strings.TrimPrefix(f, "#"))
			}
			t.header[j] = f
		}
	}
	isText := make([]bool, t.ncol)
	if cfg.textCols != nil {
		cols, err := cfg.textCols(t.header, t.ncol)
		if err != nil {
			return nil, err
		}
		for _, c := range cols {
			isText[c] = true
			t.text[c] = nil
		}
	}
	colName := func(j int) string {
		if t.header != nil {
			return fmt.Sprintf("column %d (%q)", j+1, t.header[j])
		}
		return fmt.Sprintf("column %d", j+1)
	}
	textBytes := int64(0) // estimated memory of text fields
	addRow := func(rec []string, line int) error {
		if len(rec) != t.ncol {
			return fmt.Errorf("csv: line %d: %d fields, want %d", line, len(rec), t.ncol)
		}
		for j, f := range rec {
			f = strings.TrimSpace(f)
			if isText[j] {
				if f == "" {
					return fmt.Errorf("csv: line %d, %s: empty value", line, colName(j))
				}
				t.text[j] = append(t.text[j], f)
				textBytes += int64(len(f)) + 16
				t.vals = append(t.vals, 0)
				continue
			}
			if f == "" {
				return fmt.Errorf("csv: line %d, %s: empty value", line, colName(j))
			}
			v, err := parseNumber(f)
			if err != nil {
				if errors.Is(err, errAmbiguousNumber) {
					return fmt.Errorf("csv: line %d, %s: %w", line, colName(j), err)
				}
				if errors.Is(err, strconv.ErrRange) {
					return fmt.Errorf("csv: line %d, %s: value %q is out of the float64 range", line, colName(j), f)
				}
				return fmt.Errorf("csv: line %d, %s: %q is not a number", line, colName(j), f)
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("csv: line %d, %s: value %q is not finite", line, colName(j), f)
			}
			t.vals = append(t.vals, v)
		}
		t.nrow++
		if cfg.maxBytes > 0 && 8*int64(len(t.vals))+textBytes > cfg.maxBytes {
			return fmt.Errorf("csv: line %d: the values read so far take more than %s in memory, the loading limit (LoadOptions.MaxBytes, --max-data-bytes)", line, FormatBytes(cfg.maxBytes))
		}
		return nil
	}
	if !hasHeader {
		if err := addRow(first, firstLine); err != nil {
			return nil, err
		}
	}
	if second != nil {
		if err := addRow(second, secondLine); err != nil {
			return nil, err
		}
		for {
			rec, err := cr.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				var pe *csv.ParseError
				if errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount) {
					return nil, fmt.Errorf("csv: line %d: ragged rows: %d fields, want %d", pe.StartLine, len(rec), t.ncol)
				}
				return nil, tooLong(err)
			}
			rb.limit = cr.InputOffset() + maxRecord + slack
			line, _ := cr.FieldPos(0)
			if err := addRow(rec, line); err != nil {
				return nil, err
			}
		}
	}
	if t.nrow == 0 {
		return nil, errors.New("csv: no data rows")
	}
	return t, nil
}

// column resolves a column reference: a header name (exact, then
// case-insensitive) or a 0-based index.
func (t *table) column(ref string) (int, error) {
	return resolveColumn(t.header, t.ncol, ref)
}

func resolveColumn(header []string, ncol int, ref string) (int, error) {
	for j, h := range header {
		if h == ref {
			return j, nil
		}
	}
	for j, h := range header {
		if strings.EqualFold(h, ref) {
			return j, nil
		}
	}
	if i, err := strconv.Atoi(ref); err == nil {
		if i < 0 || i >= ncol {
			return 0, fmt.Errorf("column index %d out of range (the file has %d columns, numbered from 0)", i, ncol)
		}
		return i, nil
	}
	if header == nil {
		return 0, fmt.Errorf("no column named %q: the file has no header (use a 0-based index)", ref)
	}
	return 0, fmt.Errorf("no column named %q (columns: %s)", ref, strings.Join(header, ", "))
}

// gather returns the nrow×len(cols) row-major matrix of the given columns.
func (t *table) gather(cols []int) []float64 {
	if len(cols) == t.ncol {
		same := true
		for i, c := range cols {
			same = same && c == i
		}
		if same {
			return t.vals
		}
	}
	out := make([]float64, 0, t.nrow*len(cols))
	for i := 0; i < t.nrow; i++ {
		row := t.vals[i*t.ncol : (i+1)*t.ncol]
		for _, c := range cols {
			out = append(out, row[c])
		}
	}
	return out
}

// col returns one numeric column.
func (t *table) col(j int) []float64 {
	out := make([]float64, t.nrow)
	for i := range out {
		out[i] = t.vals[i*t.ncol+j]
	}
	return out
}

// CSVFirstRecord returns the fields of the first record of the delimited
// text file at path (decompressed if gzip), or nil when the file is not
// CSV. delim 0 means ',' (tab for .tsv). It lets a caller look at a
// header without loading the file.
func CSVFirstRecord(path string, delim rune) ([]string, error) {
	src, err := openSource(path, FormatAuto)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if src.format != FormatCSV {
		return nil, nil
	}
	cr := csv.NewReader(&recordBound{r: src.r, limit: DefaultMaxRecordBytes})
	cr.Comma = ','
	if delim != 0 {
		cr.Comma = delim
	} else if hasExt(path, ".tsv") {
		cr.Comma = '\t'
	}
	cr.TrimLeadingSpace = true
	cr.FieldsPerRecord = -1
	rec, err := cr.Read()
	if err == io.EOF {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("csv: %w", err)
	}
	return rec, nil
}
