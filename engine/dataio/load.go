package dataio

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
)

// LoadOptions says how to read a data set.
type LoadOptions struct {
	// Kind is the data kind to build; empty means data.Rows.
	Kind data.Kind
	// Format overrides format detection for the main file (FormatAuto
	// detects it). Side files (labels, responses, users) are always
	// detected.
	Format Format
	// Scale multiplies every entry of X (not responses or labels); 0 means
	// 1. For example 1.0/255 maps 8-bit pixels into [0, 1].
	Scale float64
	// ColumnScales, when set, are public per-column scales of rows or users
	// data: after reading (and after Scale), column j of X is divided by
	// ColumnScales[j], before anything else sees the data. They must be
	// positive and finite, one per column. They put a table whose columns
	// are in different units on a common footing, from public knowledge
	// (units, codebook ranges); they are not derived from the data, so they
	// cost no privacy. They are part of the view, not of the source
	// identity: the budget of a data set does not change with them.
	ColumnScales []float64 `json:"column_scales,omitempty"`
	// D1, D2 give the shape of each trace-regression sample. They are
	// required for trace data read from CSV or from an n×(d1·d2) array and
	// must agree with the shape of an n×d1×d2 array.
	D1, D2 int
	// Header says whether a CSV file's first record is a header
	// (HeaderAuto detects it).
	Header HeaderMode
	// Delimiter separates CSV fields; 0 means ',' (or '\t' for .tsv).
	Delimiter rune
	// UserColumn names the CSV column holding user ids (a header name or a
	// 0-based index). Default: "user" with a header, column 0 without.
	// Integer ids are kept; if any id is not an integer, users are numbered
	// 0, 1, ... in order of first appearance.
	UserColumn string
	// ResponseColumn names the CSV column holding the response (trace,
	// users). Default: "y" with a header that has it, else the last column.
	ResponseColumn string
	// LabelColumn optionally names a CSV column of integer class labels
	// (rows data); it is removed from X and stored in Labels.
	LabelColumn string
	// FeatureColumns optionally lists the CSV columns forming X, in order.
	// Default: every column not used as user id, response or label.
	FeatureColumns []string
	// LabelsPath is an optional file (IDX, .npy or one-column CSV) of n
	// integer class labels.
	LabelsPath string
	// ResponsePath is a file (.npy, IDX or one-column CSV) of n responses:
	// required for trace and users data read from arrays, optional for CSV
	// (then every column is a feature unless FeatureColumns says otherwise).
	ResponsePath string
	// UsersPath is a file of n integer user ids, for users data read from
	// arrays (X .npy + ResponsePath + UsersPath).
	UsersPath string
	// Name is an optional human name stored in the data set.
	Name string
	// SkipHash leaves Dataset.Hash empty (a file read whole then need not
	// hash its rows unless its identity is wanted).
	SkipHash bool
	// MaxBytes bounds the memory the loaded data may take; a header that
	// declares more is refused before anything is allocated for it, and a
	// CSV file is refused once its parsed values exceed it. 0 means
	// DefaultMaxBytes (half of physical memory).
	MaxBytes int64 `json:"-"`
	// MaxRecordBytes bounds the length of one CSV record; 0 means
	// DefaultMaxRecordBytes.
	MaxRecordBytes int64 `json:"-"`
	// CacheMaxBytes bounds the size of the cache directory PrepareFile
	// writes into: least recently used entries are evicted to make room,
	// and a data set that alone exceeds it is refused. 0 means
	// DefaultCacheMaxBytes.
	CacheMaxBytes int64 `json:"-"`
}

func (o LoadOptions) kind() data.Kind {
	if o.Kind == "" {
		return data.Rows
	}
	return o.Kind
}

func (o LoadOptions) scale() float64 {
	if o.Scale == 0 {
		return 1
	}
	return o.Scale
}

// check validates the options themselves.
func (o LoadOptions) check() error {
	switch o.kind() {
	case data.Rows, data.Trace, data.Users:
	default:
		return fmt.Errorf("unknown data kind %q (want rows, trace or users)", o.Kind)
	}
	if o.MaxBytes < 0 || o.MaxRecordBytes < 0 || o.CacheMaxBytes < 0 {
		return errors.New("negative size limit")
	}
	if !isFinite(o.Scale) {
		return fmt.Errorf("scale %v is not finite", o.Scale)
	}
	if o.D1 < 0 || o.D2 < 0 {
		return fmt.Errorf("negative trace shape %d×%d", o.D1, o.D2)
	}
	if len(o.ColumnScales) > 0 {
		if o.kind() == data.Trace {
			return errors.New("column scales apply to rows and users data, not to trace data (use scale)")
		}
		for j, v := range o.ColumnScales {
			if !(v > 0) || math.IsInf(v, 1) {
				return fmt.Errorf("column scale %d is %v: each must be positive and finite", j, v)
			}
		}
	}
	if _, err := ParseFormat(string(o.Format)); err != nil {
		return err
	}
	switch o.Header {
	case HeaderAuto, HeaderYes, HeaderNo:
	default:
		return fmt.Errorf("unknown header mode %q (want yes, no or empty for auto)", o.Header)
	}
	return nil
}

// Load reads the data set at path as described by opt, validates it
// (shapes, finiteness, kind structure) and, unless opt.SkipHash, computes
// its content hash. Errors name the offending file.
func Load(path string, opt LoadOptions) (*data.Dataset, error) {
	return loadWith(path, opt, &idSink{})
}

// LoadIdentity is Load that also returns the identity of the source
// records (see Identity), computed from the values as the files hold them,
// before scaling, column selection and the other choices of opt.
func LoadIdentity(path string, opt LoadOptions) (*data.Dataset, Identity, error) {
	ds, parts, err := LoadIdentityParts(path, opt)
	if err != nil {
		return nil, Identity{}, err
	}
	return ds, parts.Identity(), nil
}

// idSink says what the loaders hash of the source rows (the identity, the
// row digests of the content hash) and collects it.
type idSink struct {
	want, hash bool
	b          *idBuilder
	feats      []int // the source fields forming X (nil: the first p)
}

// set hashes the source rows (add adds them, with side columns sides), if
// anything is wanted; the loaders call it on the unscaled source values.
func (s *idSink) set(sides []sideCol, add func(*idBuilder)) {
	if s.want || s.hash {
		s.b = newIDBuilder(sides...)
		s.b.keep = s.hash
		add(s.b)
	}
}

// loadWith is load, leaving the identity (when ids.want) in ids.
func loadWith(path string, opt LoadOptions, ids *idSink) (*data.Dataset, error) {
	if err := opt.check(); err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	ids.hash = !opt.SkipHash
	ds, err := loadStreamed(path, opt, ids)
	if err == nil && ds == nil {
		ds, err = loadWhole(path, opt, ids)
	}
	if err != nil {
		return nil, err
	}
	if err := divideColumns(ds, opt.ColumnScales); err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	ds.ColumnScaled = len(opt.ColumnScales) > 0
	ds.Name = opt.Name
	if err := checkStructure(ds); err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	if opt.SkipHash {
		ds.Hash = ""
	}
	if ids.want && ids.b == nil {
		return nil, fmt.Errorf("load %s: internal: no source identity computed", path)
	}
	return ds, nil
}

// streamHeader opens path and reads the header of the .npy or IDX n×cols
// matrix it holds, for reading its rows as a stream. src is nil, and
// nothing is left open, when the file is of another format, not
// streamable or empty: the caller then reads it whole (or reports it).
// The caller closes src.
func streamHeader(path string, opt LoadOptions) (src *source, p *pending, n, cols int, err error) {
	if src, err = openSource(path, opt.Format); err != nil {
		return nil, nil, 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	if src.format == FormatNPY || src.format == FormatIDX {
		p, err = src.header()
	}
	if err == nil && p != nil && p.streamable() {
		if err = p.checkClaim(opt.maxBytes()); err == nil {
			if n, cols, err = matrixShape(p.shape); err == nil && n > 0 && cols > 0 {
				return src, p, n, cols, nil
			}
		}
	}
	src.Close()
	if err != nil {
		return nil, nil, 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	return nil, nil, 0, 0, nil
}

// loadStreamed loads a data set through streamFile, or returns a nil data
// set when the input does not qualify (then loadWhole reads it).
// Memory follows what arrives: behind gzip, X grows as growTo says.
func loadStreamed(path string, opt LoadOptions, ids *idSink) (*data.Dataset, error) {
	var x []float64
	var n, cols int
	ds, b, err := streamFile(context.Background(), path, opt, true, func(_ *data.Dataset, _ *FileRef, rows, c int, _ dtype) (rowSink, error) {
		n, cols = rows, c
		total := n * cols
		// X grows with what arrives (growTo): a lying header costs little.
		x = make([]float64, 0, min(total, 1<<16))
		return rowSink{floats: func(out []float64) error {
			if len(x)+len(out) > cap(x) {
				x = append(make([]float64, 0, growTo(cap(x), len(x)+len(out), total)), x...)
			}
			x = append(x, out...)
			return nil
		}}, nil
	})
	if ds == nil || err != nil {
		return nil, err
	}
	ds.X = mat.NewDense(n, cols, x)
	ids.b = b
	return ds, nil
}

// labelSides returns the side columns of a rows data set: its labels if
// any.
func labelSides(ds *data.Dataset) []sideCol {
	if ds.Labels == nil {
		return nil
	}
	return []sideCol{{i: intsToInt64(ds.Labels)}}
}

// loaded is the content of one file: an array or a CSV table.
type loaded struct {
	arr *array
	tbl *table
}

// readFile reads path in the given format (auto-detected if FormatAuto).
func readFile(path string, format Format, cfg csvConfig) (loaded, error) {
	if cfg.maxBytes <= 0 {
		cfg.maxBytes = DefaultMaxBytes()
	}
	src, err := openSource(path, format)
	if err != nil {
		return loaded{}, fmt.Errorf("%s: %w", path, err)
	}
	defer src.Close()
	return decodeSource(src, path, cfg)
}

// decodeSource decodes an opened source.
func decodeSource(src *source, path string, cfg csvConfig) (loaded, error) {
	var l loaded
	var err error
	switch src.format {
	case FormatNPY, FormatIDX:
		var p *pending
		if p, err = src.header(); err == nil {
			err = p.checkClaim(cfg.maxBytes)
		}
		if err == nil {
			l.arr, err = p.read()
		}
	case FormatCSV:
		if cfg.delim == 0 && formatFromExt(path) == FormatCSV && hasExt(path, ".tsv") {
			cfg.delim = '\t'
		}
		if b, _ := src.r.Peek(3); string(b) == "\xef\xbb\xbf" {
			src.r.Discard(3) // a UTF-8 byte order mark, as spreadsheets write
		}
		l.tbl, err = readCSV(src.r, cfg)
	default:
		err = fmt.Errorf("unknown format %q", src.format)
	}
	if err != nil {
		return loaded{}, fmt.Errorf("%s: %w", path, err)
	}
	return l, nil
}

func hasExt(path, ext string) bool {
	n := len(path)
	if n >= 3 && path[n-3:] == ".gz" {
		path = path[:n-3]
	}
	return len(path) >= len(ext) && path[len(path)-len(ext):] == ext
}

func (o LoadOptions) csvConfig(textCols func([]string, int) ([]int, error)) csvConfig {
	return o.csvLimits(csvConfig{delim: o.Delimiter, header: o.Header, textCols: textCols})
}

// loadWhole reads a data set whose main file is held in memory whole: an
// array (loadArray) or a CSV table (loadTable).
func loadWhole(path string, opt LoadOptions, ids *idSink) (*data.Dataset, error) {
	userCol := -1
	var textCols func([]string, int) ([]int, error)
	if opt.kind() == data.Users {
		textCols = func(header []string, ncol int) ([]int, error) {
			ref := opt.UserColumn
			if ref == "" {
				if header == nil {
					return nil, ErrUserColumn
				}
				ref = "user"
			}
			c, err := resolveColumn(header, ncol, ref)
			if err != nil {
				if opt.UserColumn == "" {
					return nil, fmt.Errorf("%w (%w)", ErrUserColumn, err)
				}
				return nil, fmt.Errorf("user column: %w", err)
			}
			userCol = c
			return []int{c}, nil
		}
	}
	l, err := readFile(path, opt.Format, opt.csvConfig(textCols))
	if err != nil {
		return nil, err
	}
	var ds *data.Dataset
	var rowIDs []int64
	if l.arr != nil {
		ds, rowIDs, err = loadArray(l.arr, opt, ids)
	} else {
		ds, rowIDs, err = loadTable(l.tbl, opt, ids, userCol)
	}
	if err == nil && ds.Kind == data.Trace {
		err = completeTraceShape(ds, ds.P())
	}
	var order []int
	if err == nil && ds.Kind == data.Users {
		order, err = GroupByUser(ds, rowIDs)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if ids.hash {
		digs := slices.Clone(ids.b.digs) // in X's row order: each follows its row
		for k, i := range order {
			copy(digs[32*k:], ids.b.digs[32*i:32*i+32])
		}
		ds.Hash = contentHash(ds, hashView{scale: opt.scale(), colScales: opt.ColumnScales, feats: ids.feats}, digs)
	}
	return ds, nil
}

// loadArray builds a data set from an array main file and the side files
// opt names; for users data it returns each row's user id.
func loadArray(a *array, opt LoadOptions, ids *idSink) (*data.Dataset, []int64, error) {
	ds := &data.Dataset{Kind: opt.kind()}
	if ds.Kind == data.Rows && (opt.LabelColumn != "" || len(opt.FeatureColumns) > 0) {
		return nil, nil, errors.New("column options apply to CSV files only")
	}
	n, p, err := matrixShape(a.shape)
	if err != nil {
		return nil, nil, err
	}
	if n == 0 || p == 0 {
		return nil, nil, fmt.Errorf("empty array of shape %v", a.shape)
	}
	rowIDs, err := arraySides(ds, a.shape, opt)
	if err != nil {
		return nil, nil, err
	}
	x, err := a.float64s()
	if err != nil {
		return nil, nil, err
	}
	ds.X = mat.NewDense(n, p, x)
	ids.set(sideCols(ds, rowIDs), func(b *idBuilder) { b.addMatrix(x, n, p) })
	return ds, rowIDs, scaleInPlace(x, opt.scale())
}

// arraySides reads the side files of a data set whose X is an array of
// the given shape: for trace data the sample shape (from a rank-3 array or
// opt) and the responses, for users data the responses and the user ids
// (returned, one per row), and the labels.
func arraySides(ds *data.Dataset, shape []int, opt LoadOptions) (rowIDs []int64, err error) {
	n := shape[0]
	switch ds.Kind {
	case data.Trace:
		ds.D1, ds.D2 = opt.D1, opt.D2
		switch len(shape) {
		case 3:
			if (opt.D1 != 0 && opt.D1 != shape[1]) || (opt.D2 != 0 && opt.D2 != shape[2]) {
				return nil, fmt.Errorf("array of shape %v does not hold %d×%d samples", shape, opt.D1, opt.D2)
			}
			ds.D1, ds.D2 = shape[1], shape[2]
		case 2:
		default:
			return nil, fmt.Errorf("trace data needs an n×d1×d2 or n×(d1·d2) array, found shape %v", shape)
		}
		if opt.ResponsePath == "" {
			return nil, errors.New("trace data from an array needs a response file")
		}
	case data.Users:
		if opt.ResponsePath == "" || opt.UsersPath == "" {
			return nil, errors.New("user data from an array needs a response file and a user id file")
		}
		if len(shape) != 2 {
			return nil, fmt.Errorf("user data needs an n×p array, found shape %v", shape)
		}
		if rowIDs, err = readIntVector(opt.UsersPath, "user ids", n, opt.maxBytes()); err != nil {
			return nil, err
		}
	}
	if ds.Kind != data.Rows {
		if ds.Y, _, err = readVector(opt.ResponsePath, "response", n, opt.maxBytes()); err != nil {
			return nil, err
		}
	}
	return rowIDs, loadLabelsN(ds, opt, n)
}

// loadTable builds a data set from a CSV table: the response from its
// column (or opt's file), the labels from their column (rows data) or
// file, the user ids (returned) from column userCol (-1 for none) and X
// from the feature columns.
func loadTable(t *table, opt LoadOptions, ids *idSink, userCol int) (*data.Dataset, []int64, error) {
	ds := &data.Dataset{Kind: opt.kind()}
	if ds.Kind == data.Trace {
		ds.D1, ds.D2 = opt.D1, opt.D2
	}
	var skip []int
	var fileSides []sideCol // side values read from files, part of the identity
	if userCol >= 0 {
		skip = append(skip, userCol)
	}
	var err error
	switch {
	case ds.Kind == data.Rows:
	case opt.ResponsePath != "":
		if ds.Y, _, err = readVector(opt.ResponsePath, "response", t.nrow, opt.maxBytes()); err != nil {
			return nil, nil, err
		}
		fileSides = append(fileSides, sideCol{f: ds.Y})
	default:
		c, err := responseColumn(t, opt.ResponseColumn)
		if err != nil {
			return nil, nil, fmt.Errorf("response column: %w", err)
		}
		if c == userCol {
			return nil, nil, errors.New("the user column is also the response column")
		}
		ds.Y = t.col(c)
		skip = append(skip, c)
	}
	if err := loadLabelsN(ds, opt, t.nrow); err != nil {
		return nil, nil, err
	}
	fileSides = append(fileSides, labelSides(ds)...)
	ids.set(fileSides, func(b *idBuilder) { b.addTable(t) })
	if ds.Kind == data.Rows && opt.LabelColumn != "" {
		if ds.Labels != nil {
			return nil, nil, errors.New("labels given both as a column and as a file")
		}
		c, err := t.column(opt.LabelColumn)
		if err != nil {
			return nil, nil, fmt.Errorf("label column: %w", err)
		}
		ints, err := floatsToInts(t.col(c))
		if err != nil {
			return nil, nil, fmt.Errorf("label column: %w", err)
		}
		if ds.Labels, err = toLabels(ints); err != nil {
			return nil, nil, err
		}
		skip = append(skip, c)
	}
	var rowIDs []int64
	if userCol >= 0 {
		if rowIDs, err = parseUserIDs(t.text[userCol]); err != nil {
			return nil, nil, fmt.Errorf("user column: %w", err)
		}
	}
	if ds.X, ids.feats, err = t.features(opt.FeatureColumns, skip); err != nil {
		return nil, nil, err
	}
	return ds, rowIDs, scaleInPlace(ds.X.RawMatrix().Data, opt.scale())
}

// ReadColumnScales reads public per-column scales from path: a .npy
// vector (or 1×p array), or a CSV file holding one line of p numbers
// (a header line of column names before it is allowed).
func ReadColumnScales(path string) ([]float64, error) {
	ds, err := Load(path, LoadOptions{Kind: data.Rows, SkipHash: true, MaxBytes: 64 << 20})
	if err != nil {
		return nil, fmt.Errorf("column scales %s: %w", path, err)
	}
	n, p := ds.X.Dims()
	if n != 1 && p != 1 {
		return nil, fmt.Errorf("column scales %s: %d×%d values, want one line of numbers (or a vector)", path, n, p)
	}
	return append([]float64(nil), ds.X.RawMatrix().Data[:n*p]...), nil
}

// divideColumns divides column j of ds.X by scales[j] (nil: nothing),
// checking that there is one scale per column and that every value stays
// finite.
func divideColumns(ds *data.Dataset, scales []float64) error {
	if len(scales) == 0 {
		return nil
	}
	if ds.X == nil {
		return errors.New("column scales need the rows in memory")
	}
	n, p := ds.X.Dims()
	if len(scales) != p {
		return fmt.Errorf("%d column scales for %d columns", len(scales), p)
	}
	for i := 0; i < n; i++ {
		row := ds.X.RawRowView(i)
		for j, s := range scales {
			row[j] /= s
			if math.IsInf(row[j], 0) {
				return fmt.Errorf("row %d, column %d: value is not finite after dividing by the column scale %v", i, j, s)
			}
		}
	}
	return nil
}

// scaleInPlace multiplies x by s and checks finiteness.
func scaleInPlace(x []float64, s float64) error {
	if s == 1 {
		return nil
	}
	for i := range x {
		x[i] *= s
	}
	if i := firstNonFinite(x); i >= 0 {
		return fmt.Errorf("element %d is not finite after scaling by %v", i, s)
	}
	return nil
}

// readVector reads a side file of n values: a rank-1 or n×1 array, or a
// one-column CSV.
func readVector(path, what string, n int, maxBytes int64) ([]float64, *array, error) {
	l, err := readFile(path, FormatAuto, csvConfig{maxBytes: maxBytes})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	if l.tbl != nil {
		if l.tbl.ncol != 1 {
			return nil, nil, fmt.Errorf("%s: %s: want one column, found %d", what, path, l.tbl.ncol)
		}
		if l.tbl.nrow != n {
			return nil, nil, fmt.Errorf("%s: %s: %d values for %d rows", what, path, l.tbl.nrow, n)
		}
		return l.tbl.vals, nil, nil
	}
	a := l.arr
	if len(a.shape) == 0 || len(a.shape) > 2 || (len(a.shape) == 2 && a.shape[1] != 1) {
		return nil, nil, fmt.Errorf("%s: %s: want a vector, found shape %v", what, path, a.shape)
	}
	if a.shape[0] != n {
		return nil, nil, fmt.Errorf("%s: %s: %d values for %d rows", what, path, a.shape[0], n)
	}
	v, err := a.float64s()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %s: %w", what, path, err)
	}
	return v, a, nil
}

// readIntVector reads a side file of n integers.
func readIntVector(path, what string, n int, maxBytes int64) ([]int64, error) {
	v, a, err := readVector(path, what, n, maxBytes)
	if err != nil {
		return nil, err
	}
	var out []int64
	if a != nil && a.dt.integer() {
		out, err = a.int64s()
	} else {
		out, err = floatsToInts(v)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", what, path, err)
	}
	return out, nil
}

func floatsToInts(v []float64) ([]int64, error) {
	out := make([]int64, len(v))
	for i, x := range v {
		if x != math.Trunc(x) || math.Abs(x) >= 1<<53 {
			return nil, fmt.Errorf("element %d: value %v is not an integer", i, x)
		}
		out[i] = int64(x)
	}
	return out, nil
}

func toLabels(v []int64) ([]int, error) {
	out := make([]int, len(v))
	for i, x := range v {
		if int64(int(x)) != x {
			return nil, fmt.Errorf("label %d: %d does not fit in int", i, x)
		}
		out[i] = int(x)
	}
	return out, nil
}

// loadLabelsN reads the labels file of n rows, if any, into ds.Labels.
func loadLabelsN(ds *data.Dataset, opt LoadOptions, n int) error {
	if opt.LabelsPath == "" {
		return nil
	}
	if ds.Labels != nil {
		return errors.New("labels given both as a column and as a file")
	}
	ints, err := readIntVector(opt.LabelsPath, "labels", n, opt.maxBytes())
	if err != nil {
		return err
	}
	if ds.Labels, err = toLabels(ints); err != nil {
		return fmt.Errorf("labels: %s: %w", opt.LabelsPath, err)
	}
	return nil
}

// features builds X from the named columns, or from every column not in
// skip, and returns the columns it took.
func (t *table) features(names []string, skip []int) (*mat.Dense, []int, error) {
	var cols []int
	if len(names) > 0 {
		for _, nm := range names {
			c, err := t.column(nm)
			if err != nil {
				return nil, nil, fmt.Errorf("feature column: %w", err)
			}
			if slices.Contains(skip, c) {
				return nil, nil, fmt.Errorf("column %q is both a feature and a user, response or label column", nm)
			}
			cols = append(cols, c)
		}
	} else {
		for j := 0; j < t.ncol; j++ {
			if !slices.Contains(skip, j) {
				cols = append(cols, j)
			}
		}
	}
	for _, c := range cols {
		if _, ok := t.text[c]; ok {
			return nil, nil, fmt.Errorf("column %d holds text, not numbers", c)
		}
	}
	if len(cols) == 0 {
		return nil, nil, errors.New("no feature columns")
	}
	return mat.NewDense(t.nrow, len(cols), t.gather(cols)), cols, nil
}

// responseColumn picks the response column of a CSV table.
func responseColumn(t *table, ref string) (int, error) {
	if ref != "" {
		return t.column(ref)
	}
	if t.header != nil {
		if c, err := t.column("y"); err == nil {
			return c, nil
		}
	}
	return t.ncol - 1, nil
}

// completeTraceShape completes ds.D1 or ds.D2 from the other and the row
// length p, and checks that d1·d2 = p.
func completeTraceShape(ds *data.Dataset, p int) error {
	switch {
	case ds.D1 == 0 && ds.D2 == 0:
		return fmt.Errorf("trace data: give d1 and d2 (rows hold %d values)", p)
	case ds.D1 == 0 && p%ds.D2 == 0:
		ds.D1 = p / ds.D2
	case ds.D2 == 0 && p%ds.D1 == 0:
		ds.D2 = p / ds.D1
	}
	if ds.D1*ds.D2 != p {
		return fmt.Errorf("trace data: rows of %d values do not hold %d×%d matrices", p, ds.D1, ds.D2)
	}
	return nil
}

// sideCols returns the side columns of an array source in their canonical
// order: responses, user ids (one per row, or rowIDs when given), labels.
func sideCols(ds *data.Dataset, rowIDs []int64) []sideCol {
	var out []sideCol
	if ds.Y != nil {
		out = append(out, sideCol{f: ds.Y})
	}
	if rowIDs != nil {
		out = append(out, sideCol{i: rowIDs})
	}
	return append(out, labelSides(ds)...)
}

// ErrUserColumn is returned when a users data set from CSV does not name
// its user id column.
var ErrUserColumn = errors.New("users data from CSV needs its user id column named: give the column (LoadOptions.UserColumn, --user-column) or a header with a column named \"user\"")

// parseUserIDs converts textual user ids. Ids that read as numbers must be
// integers in canonical form ("7", "-3"; not "7.0", "07", "+7" or "7e0"),
// so that one person cannot appear under two spellings of one number;
// other text ids are kept as names. If every id is an integer the integers
// are the ids; otherwise users are numbered by first appearance.
func parseUserIDs(text []string) ([]int64, error) {
	ids := make([]int64, len(text))
	allInts := true
	for i, s := range text {
		v, err := strconv.ParseInt(s, 10, 64)
		if err == nil && strconv.FormatInt(v, 10) == s {
			ids[i] = v
			continue
		}
		if isNumber(s) || err == nil || errors.Is(err, strconv.ErrRange) {
			return nil, fmt.Errorf("row %d: user id %q is a number not written as a canonical integer (write e.g. 1, not 1.0, 01 or +1): one user under two spellings would count as two users", i+1, s)
		}
		allInts = false
	}
	if allInts {
		return ids, nil
	}
	seen := map[string]int64{}
	for j, s := range text {
		id, ok := seen[s]
		if !ok {
			id = int64(len(seen))
			seen[s] = id
		}
		ids[j] = id
	}
	return ids, nil
}

// GroupByUser reorders the rows of ds (X, Y, Labels) so that each user's
// rows are contiguous, users in increasing id order and rows within a user
// in their original order, and fills UserStart and UserIDs. ids holds the
// user id of each row. Nothing is written into the old X, Y or Labels: if
// rows move, reordered copies replace them (so a memory-mapped X is fine),
// and the new order is returned (the old index of each row; nil when no
// row moves). It fails if ids, Y or Labels do not have one entry per row
// of X.
func GroupByUser(ds *data.Dataset, ids []int64) ([]int, error) {
	n := len(ids)
	if ds.X != nil && !ds.X.IsEmpty() && ds.N() != n {
		return nil, fmt.Errorf("%d user ids for %d rows", n, ds.N())
	}
	if ds.Y != nil && len(ds.Y) != n {
		return nil, fmt.Errorf("%d user ids for %d responses", n, len(ds.Y))
	}
	if ds.Labels != nil && len(ds.Labels) != n {
		return nil, fmt.Errorf("%d user ids for %d labels", n, len(ds.Labels))
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ids[a], ids[b]) })
	ds.UserStart = ds.UserStart[:0]
	ds.UserIDs = ds.UserIDs[:0]
	for k, i := range order {
		if k == 0 || ids[i] != ids[order[k-1]] {
			ds.UserStart = append(ds.UserStart, k)
			ds.UserIDs = append(ds.UserIDs, ids[i])
		}
	}
	ds.UserStart = append(ds.UserStart, n)
	if slices.IsSorted(ids) {
		return nil, nil // no row moves
	}
	if ds.X != nil {
		r, c := ds.X.Dims()
		nx := mat.NewDense(r, c, nil)
		for k, i := range order {
			nx.SetRow(k, ds.X.RawRowView(i))
		}
		ds.X = nx
	}
	ds.Y, ds.Labels = permute(ds.Y, order), permute(ds.Labels, order)
	return order, nil
}

// permute returns v in the given order (nil stays nil).
func permute[T any](v []T, order []int) []T {
	if v == nil {
		return nil
	}
	out := make([]T, len(v))
	for k, i := range order {
		out[k] = v[i]
	}
	return out
}
