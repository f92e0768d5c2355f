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
}

// csvConfig configures readCSV.
type csvConfig struct {
	delim  rune
	header HeaderMode
	// textCols returns the columns to keep as text (e.g. user ids), given
	// the header (nil if none) and the number of columns.
	textCols func(header []string, ncol int) ([]int, error)
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return err == nil || errors.Is(err, strconv.ErrRange)
}

// readCSV parses a delimited text file of numbers. Every record must have
// the same number of fields; every numeric field must be a finite number.
func readCSV(r io.Reader, cfg csvConfig) (*table, error) {
	cr := csv.NewReader(r)
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
		return nil, fmt.Errorf("csv: %w", err)
	}
	cr.ReuseRecord = true
	firstLine, _ := cr.FieldPos(0)
	var second []string
	secondLine := 0
	rec, err := cr.Read()
	switch {
	case err == io.EOF:
	case err != nil:
		return nil, fmt.Errorf("csv: %w", err)
	default:
		second = append([]string(nil), rec...)
		secondLine, _ = cr.FieldPos(0)
	}
	hasHeader := false
	switch cfg.header {
	case HeaderYes:
		hasHeader = true
	case HeaderNo:
	case HeaderAuto:
		if strings.HasPrefix(strings.TrimSpace(first[0]), "#") {
			hasHeader = true
			break
		}
		for j, f := range first {
			if isNumber(f) {
				continue
			}
			if second == nil || (j < len(second) && isNumber(second[j])) {
				hasHeader = true
				break
			}
		}
	default:
		return nil, fmt.Errorf("csv: unknown header mode %q (want yes, no or empty for auto)", cfg.header)
	}
	t := &table{ncol: len(first), text: map[int][]string{}}
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
				t.vals = append(t.vals, 0)
				continue
			}
			if f == "" {
				return fmt.Errorf("csv: line %d, %s: empty value", line, colName(j))
			}
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
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
				return nil, fmt.Errorf("csv: %w", err)
			}
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
	cr := csv.NewReader(src.r)
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
