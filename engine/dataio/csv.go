package dataio

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
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
// The header is decided once the second record (or the end) is read.
func readCSV(r io.Reader, cfg csvConfig) (*table, error) {
	src := newCSVSource(r, cfg)
	var first []string
	var firstLine int
	var b *tableBuilder
	for {
		rec, line, err := src.next(len(first))
		if err != nil {
			return nil, err
		}
		switch {
		case first == nil && rec == nil:
			return nil, errors.New("csv: empty file")
		case first == nil:
			first, firstLine = slices.Clone(rec), line
			continue
		case b == nil:
			hasHeader, err := headerPresent(cfg.header, first, rec)
			if err != nil {
				return nil, err
			}
			if b, err = newTableBuilder(first, rec, hasHeader, cfg); err != nil {
				return nil, err
			}
			if !hasHeader {
				if err := b.addRow(first, firstLine); err != nil {
					return nil, err
				}
			}
		}
		if rec == nil {
			break
		}
		if err := b.addRow(rec, line); err != nil {
			return nil, err
		}
	}
	if b.t.nrow == 0 {
		return nil, errors.New("csv: no data rows")
	}
	return b.t, nil
}

// csvSlack is the read-ahead of csv.Reader's own buffer, allowed beyond
// the record bound.
const csvSlack = 4096

// csvSource reads the records of a CSV file, none longer than maxRecord
// bytes: it moves its recordBound past each record it has read.
type csvSource struct {
	cr        *csv.Reader
	rb        *recordBound
	maxRecord int64
}

func newCSVSource(r io.Reader, cfg csvConfig) *csvSource {
	maxRecord := cfg.maxRecord
	if maxRecord <= 0 {
		maxRecord = DefaultMaxRecordBytes
	}
	rb := &recordBound{r: r, limit: maxRecord + csvSlack}
	cr := csv.NewReader(rb)
	if cfg.delim != 0 {
		cr.Comma = cfg.delim
	}
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	return &csvSource{cr: cr, rb: rb, maxRecord: maxRecord}
}

// advance allows the next record maxRecord bytes past the current offset.
func (s *csvSource) advance() { s.rb.limit = s.cr.InputOffset() + s.maxRecord + csvSlack }

// wrap states a read error, naming the record bound when it was hit.
func (s *csvSource) wrap(err error) error {
	if errors.Is(err, errRecordTooLong) {
		return fmt.Errorf("csv: a record is longer than %s, the limit (LoadOptions.MaxRecordBytes); is this a CSV file?", FormatBytes(s.maxRecord))
	}
	return fmt.Errorf("csv: %w", err)
}

// next reads the next record (nil at the end of the file) and its line;
// ncol is the expected number of fields, for the ragged-row message. The
// record is reused by the following call.
func (s *csvSource) next(ncol int) ([]string, int, error) {
	rec, err := s.cr.Read()
	if err == io.EOF {
		return nil, 0, nil
	}
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount) {
			return nil, 0, fmt.Errorf("csv: line %d: ragged rows: %d fields, want %d", pe.StartLine, len(rec), ncol)
		}
		return nil, 0, s.wrap(err)
	}
	s.advance()
	line, _ := s.cr.FieldPos(0)
	return rec, line, nil
}

// headerPresent decides from mode (and, for HeaderAuto, from the first
// two records) whether the first record is a header.
func headerPresent(mode HeaderMode, first, second []string) (bool, error) {
	switch mode {
	case HeaderYes:
		return true, nil
	case HeaderNo:
		return false, nil
	case HeaderAuto:
		return autoHeader(first, second), nil
	default:
		return false, fmt.Errorf("csv: unknown header mode %q (want yes, no or empty for auto)", mode)
	}
}

// tableBuilder appends parsed records to a table, keeping the text
// columns as text and bounding the table's memory.
type tableBuilder struct {
	t         *table
	isText    []bool
	textBytes int64 // estimated memory of text fields
	maxBytes  int64
}

// newTableBuilder starts the table whose first record is first: its
// header (when hasHeader) and its text columns.
func newTableBuilder(first, second []string, hasHeader bool, cfg csvConfig) (*tableBuilder, error) {
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
	b := &tableBuilder{t: t, isText: make([]bool, t.ncol), maxBytes: cfg.maxBytes}
	if cfg.textCols != nil {
		cols, err := cfg.textCols(t.header, t.ncol)
		if err != nil {
			return nil, err
		}
		for _, c := range cols {
			b.isText[c] = true
			t.text[c] = nil
		}
	}
	return b, nil
}

// colName names column j in messages, with its header name if any.
func (b *tableBuilder) colName(j int) string {
	if b.t.header != nil {
		return fmt.Sprintf("column %d (%q)", j+1, b.t.header[j])
	}
	return fmt.Sprintf("column %d", j+1)
}

// addRow appends the record read at line.
func (b *tableBuilder) addRow(rec []string, line int) error {
	t := b.t
	if len(rec) != t.ncol {
		return fmt.Errorf("csv: line %d: %d fields, want %d", line, len(rec), t.ncol)
	}
	for j, f := range rec {
		f = strings.TrimSpace(f)
		if f == "" {
			return fmt.Errorf("csv: line %d, %s: empty value", line, b.colName(j))
		}
		if b.isText[j] {
			t.text[j] = append(t.text[j], f)
			b.textBytes += int64(len(f)) + 16
			t.vals = append(t.vals, 0)
			continue
		}
		v, err := b.number(f, line, j)
		if err != nil {
			return err
		}
		t.vals = append(t.vals, v)
	}
	t.nrow++
	if b.maxBytes > 0 && 8*int64(len(t.vals))+b.textBytes > b.maxBytes {
		return fmt.Errorf("csv: line %d: the values read so far take more than %s in memory, the loading limit (LoadOptions.MaxBytes, --max-data-bytes)", line, FormatBytes(b.maxBytes))
	}
	return nil
}

// number parses the numeric field f of column j at line: a finite float64.
func (b *tableBuilder) number(f string, line, j int) (float64, error) {
	v, err := parseNumber(f)
	if err != nil {
		if errors.Is(err, errAmbiguousNumber) {
			return 0, fmt.Errorf("csv: line %d, %s: %w", line, b.colName(j), err)
		}
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("csv: line %d, %s: value %q is out of the float64 range", line, b.colName(j), f)
		}
		return 0, fmt.Errorf("csv: line %d, %s: %q is not a number", line, b.colName(j), f)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("csv: line %d, %s: value %q is not finite", line, b.colName(j), f)
	}
	return v, nil
}

// column resolves a column reference: a header name (exact, then
// case-insensitive) or a 0-based index.
func (t *table) column(ref string) (int, error) {
	return resolveColumn(t.header, t.ncol, ref)
}

func resolveColumn(header []string, ncol int, ref string) (int, error) {
	if j := slices.Index(header, ref); j >= 0 {
		return j, nil
	}
	if j := slices.IndexFunc(header, func(h string) bool { return strings.EqualFold(h, ref) }); j >= 0 {
		return j, nil
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
	if delim == 0 && hasExt(path, ".tsv") {
		delim = '\t'
	}
	cs := newCSVSource(src.r, csvConfig{delim: delim})
	cs.cr.FieldsPerRecord = -1
	rec, _, err := cs.next(0)
	return slices.Clone(rec), err
}
