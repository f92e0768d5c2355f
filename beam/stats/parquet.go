package stats

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/xitongsys/parquet-go-source/local"
	"github.com/xitongsys/parquet-go/parquet"
	"github.com/xitongsys/parquet-go/reader"
	"github.com/xitongsys/parquet-go/schema"

	"github.com/dplr/dplr/engine/data"
)

// ParquetSchema names the columns of a Parquet shard. A shard holds its
// features either as one numeric column per feature (DOUBLE, FLOAT, INT32
// or INT64, required or optional without nulls) or as one list column
// (a LIST, or a repeated numeric field) with the same number of values in
// every row; users data adds a user id column (INT32 or INT64 integers, or
// BYTE_ARRAY text under the single-machine loader's rules for text ids, see
// UserKey), trace and users data a numeric response column. Rows are read with the
// Parquet library Beam's own parquetio uses (github.com/xitongsys/parquet-go),
// in its column mode, so the feature count need not be known when the
// program is compiled.
//
// Defaults: the features are the List column when it is set, else the
// Features columns when set, else every top-level numeric column other than
// the user and response columns, in schema order, else the file's one list
// column. Names are the column names as the file spells them.
//
// User, Response and Features also name the columns of CSV shards (header
// names or 0-based indexes, with the single-machine reader's defaults:
// dataio.LoadOptions UserColumn, ResponseColumn and FeatureColumns). List
// concerns Parquet shards only, and array shards (.npy, IDX) have no named
// columns, so that one glob may mix Parquet shards with others.
type ParquetSchema struct {
	// Features lists the scalar feature columns, in order.
	Features []string
	// List names a list column holding all features of a row.
	List string
	// User names the user id column of users data (default "user").
	User string
	// Response names the response column of trace and users data
	// (default "y").
	Response string
}

func (s ParquetSchema) user() string {
	if s.User == "" {
		return "user"
	}
	return s.User
}

func (s ParquetSchema) response() string {
	if s.Response == "" {
		return "y"
	}
	return s.Response
}

// isParquet reports whether path is read as Parquet: format "parquet", or
// no format forced and a .parquet (.parq) extension.
func isParquet(path, format string) bool {
	if format != "" {
		return strings.EqualFold(format, "parquet")
	}
	l := strings.ToLower(path)
	return strings.HasSuffix(l, ".parquet") || strings.HasSuffix(l, ".parq")
}

// pqColumn is one leaf column of a Parquet file.
type pqColumn struct {
	name   string // top-level name as the file spells it
	inPath string // the library's internal path of the leaf
	typ    parquet.Type
	maxRL  int32 // 0: scalar, 1: list
	maxDL  int32
}

func numericType(t parquet.Type) bool {
	switch t {
	case parquet.Type_DOUBLE, parquet.Type_FLOAT, parquet.Type_INT32, parquet.Type_INT64:
		return true
	}
	return false
}

// pqColumns lists the leaf columns of sh (nested deeper than one list
// level are skipped: they cannot be a feature, user or response column).
func pqColumns(sh *schema.SchemaHandler) []pqColumn {
	var cols []pqColumn
	for i, el := range sh.SchemaElements {
		if i == 0 || el.GetNumChildren() > 0 || el.Type == nil {
			continue
		}
		in := sh.IndexMap[int32(i)]
		path := strings.Split(in, "\x01")
		if len(path) < 2 {
			continue
		}
		rl, err1 := sh.MaxRepetitionLevel(path)
		dl, err2 := sh.MaxDefinitionLevel(path)
		if err1 != nil || err2 != nil || rl > 1 {
			continue
		}
		ex := strings.Split(sh.InPathToExPath[in], "\x01")
		top := path[1]
		if len(ex) >= 2 {
			top = ex[1]
		}
		cols = append(cols, pqColumn{name: top, inPath: in, typ: el.GetType(), maxRL: rl, maxDL: dl})
	}
	return cols
}

// readParquet reads a Parquet shard of the given kind into a shard
// (features unscaled). Its errors mirror the single-machine readers'
// (empty file, empty table, non-finite value at row i, column j).
func readParquet(path string, kind data.Kind, ps ParquetSchema) (sh *shard, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if fi.Size() == 0 {
		return nil, fmt.Errorf("%s: parquet: empty file", path)
	}
	f, err := local.NewLocalFileReader(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	// The library panics on some malformed files: report them as corrupt.
	defer func() {
		if r := recover(); r != nil {
			sh, err = nil, fmt.Errorf("%s: parquet: corrupt file: %v", path, r)
		}
	}()
	if err := checkMagic(f); err != nil {
		return nil, fmt.Errorf("%s: parquet: %w", path, err)
	}
	pr, err := reader.NewParquetColumnReader(f, 1)
	if err != nil {
		return nil, fmt.Errorf("%s: parquet: corrupt file: %w", path, err)
	}
	defer pr.ReadStop()
	n := pr.GetNumRows()
	cols := pqColumns(pr.SchemaHandler)
	feat, list, err := ps.features(cols, kind)
	if err != nil {
		return nil, fmt.Errorf("%s: parquet: %w", path, err)
	}
	if n <= 0 {
		return nil, fmt.Errorf("%s: parquet: empty table of 0 rows", path)
	}
	out := &shard{n: int(n)}
	if list != nil {
		out.x, out.p, err = readList(pr, *list, int(n))
	} else {
		out.p = len(feat)
		out.x = make([]float64, int(n)*len(feat))
		for j, c := range feat {
			v, err := readScalar(pr, c, int(n))
			if err != nil {
				return nil, fmt.Errorf("%s: parquet: %w", path, err)
			}
			for i, x := range v {
				out.x[i*out.p+j] = x
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: parquet: %w", path, err)
	}
	if i := slices.IndexFunc(out.x, notFinite); i >= 0 {
		return nil, fmt.Errorf("%s: row %d, column %d: value %v is not finite", path, i/out.p, i%out.p, out.x[i])
	}
	if kind == data.Trace || kind == data.Users {
		c, ok := findColumn(cols, ps.response())
		if !ok {
			return nil, fmt.Errorf("%s: no response column %q (ParquetSchema.Response)", path, ps.response())
		}
		if out.y, err = readScalar(pr, c, int(n)); err != nil {
			return nil, fmt.Errorf("%s: parquet: %w", path, err)
		}
		if i := slices.IndexFunc(out.y, notFinite); i >= 0 {
			return nil, fmt.Errorf("%s: response %d: value %v is not finite", path, i, out.y[i])
		}
	}
	if kind == data.Users {
		c, ok := findColumn(cols, ps.user())
		if !ok {
			return nil, fmt.Errorf("%s: no user id column %q (ParquetSchema.User)", path, ps.user())
		}
		if out.users, err = readUserKeys(pr, c, int(n)); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out.pos = make([]int, n)
		for i := range out.pos {
			out.pos[i] = i
		}
	}
	return out, nil
}

// readUserKeys reads the n user ids of column c as user keys (UserKey):
// integers (INT32, INT64) or text (BYTE_ARRAY), each under the
// single-machine loader's rules for text ids.
func readUserKeys(pr *reader.ParquetReader, c pqColumn, n int) ([]string, error) {
	switch {
	case c.maxRL != 0:
		return nil, fmt.Errorf("user id column %q is a list column, want one id per row", c.name)
	case c.typ != parquet.Type_INT32 && c.typ != parquet.Type_INT64 && c.typ != parquet.Type_BYTE_ARRAY:
		return nil, fmt.Errorf("user id column %q is %s, want INT32, INT64 or BYTE_ARRAY (text)", c.name, c.typ)
	}
	vals, _, _, err := pr.ReadColumnByPath(c.inPath, int64(n))
	if err != nil {
		return nil, fmt.Errorf("parquet: column %q: %w", c.name, err)
	}
	if len(vals) != n {
		return nil, fmt.Errorf("parquet: column %q: %d values for %d rows", c.name, len(vals), n)
	}
	keys := make([]string, n)
	for i, v := range vals {
		switch x := v.(type) {
		case int32:
			keys[i] = strconv.FormatInt(int64(x), 10)
		case int64:
			keys[i] = strconv.FormatInt(x, 10)
		case string:
			k, err := UserKey(x)
			switch {
			case errors.Is(err, errEmptyUserID):
				return nil, fmt.Errorf("row %d, column %q: empty value", i, c.name)
			case err != nil:
				return nil, fmt.Errorf("user column: row %d: %w", i+1, err)
			}
			keys[i] = k
		case nil:
			return nil, fmt.Errorf("row %d, column %q: empty value", i, c.name)
		default:
			return nil, fmt.Errorf("row %d, column %q: %T is not a user id", i, c.name, v)
		}
	}
	return keys, nil
}

// checkMagic checks the leading and trailing "PAR1" of a Parquet file.
func checkMagic(f interface {
	Seek(int64, int) (int64, error)
	Read([]byte) (int, error)
}) error {
	end, err := f.Seek(0, 2)
	if err != nil {
		return err
	}
	const magic = "PAR1"
	if end < 12 {
		return errors.New("not a Parquet file (too short)")
	}
	var head, tail [4]byte
	for _, c := range []struct {
		at  int64
		buf []byte
	}{{0, head[:]}, {end - 4, tail[:]}} {
		if _, err := f.Seek(c.at, 0); err != nil {
			return err
		}
		if _, err := f.Read(c.buf); err != nil {
			return err
		}
	}
	if string(head[:]) != magic || string(tail[:]) != magic {
		return errors.New("not a Parquet file (no PAR1 magic)")
	}
	_, err = f.Seek(0, 0)
	return err
}

func notFinite(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

func findColumn(cols []pqColumn, name string) (pqColumn, bool) {
	for _, c := range cols {
		if c.name == name {
			return c, true
		}
	}
	return pqColumn{}, false
}

// features chooses the feature columns (scalars) or list column.
func (s ParquetSchema) features(cols []pqColumn, kind data.Kind) ([]pqColumn, *pqColumn, error) {
	want := func(c pqColumn, name string, list bool) (pqColumn, error) {
		if !numericType(c.typ) {
			return c, fmt.Errorf("feature column %q is %s, want DOUBLE, FLOAT, INT32 or INT64", name, c.typ)
		}
		if list != (c.maxRL == 1) {
			if list {
				return c, fmt.Errorf("column %q is not a list column", name)
			}
			return c, fmt.Errorf("column %q is a list column (ParquetSchema.List)", name)
		}
		return c, nil
	}
	switch {
	case s.List != "":
		c, ok := findColumn(cols, s.List)
		if !ok {
			return nil, nil, fmt.Errorf("no list column %q (ParquetSchema.List)", s.List)
		}
		c, err := want(c, s.List, true)
		return nil, &c, err
	case len(s.Features) > 0:
		var out []pqColumn
		for _, name := range s.Features {
			c, ok := findColumn(cols, name)
			if !ok {
				return nil, nil, fmt.Errorf("no feature column %q (ParquetSchema.Features)", name)
			}
			c, err := want(c, name, false)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, c)
		}
		return out, nil, nil
	}
	skip := map[string]bool{}
	if kind == data.Trace || kind == data.Users {
		skip[s.response()] = true
	}
	if kind == data.Users {
		skip[s.user()] = true
	}
	var scalars, lists []pqColumn
	for _, c := range cols {
		if skip[c.name] || !numericType(c.typ) {
			continue
		}
		if c.maxRL == 1 {
			lists = append(lists, c)
		} else {
			scalars = append(scalars, c)
		}
	}
	switch {
	case len(scalars) > 0 && len(lists) > 0:
		return nil, nil, errors.New("both scalar and list numeric columns: name the features (ParquetSchema.Features or List)")
	case len(scalars) > 0:
		return scalars, nil, nil
	case len(lists) == 1:
		return nil, &lists[0], nil
	case len(lists) > 1:
		return nil, nil, errors.New("several list columns: name the features' one (ParquetSchema.List)")
	}
	return nil, nil, errors.New("no numeric feature column")
}

// toFloat converts one value the library decoded.
func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// readScalar reads the n values of a scalar column; a null is an error.
func readScalar(pr *reader.ParquetReader, c pqColumn, n int) ([]float64, error) {
	vals, _, _, err := pr.ReadColumnByPath(c.inPath, int64(n))
	if err != nil {
		return nil, fmt.Errorf("column %q: %w", c.name, err)
	}
	if len(vals) != n {
		return nil, fmt.Errorf("column %q: %d values for %d rows", c.name, len(vals), n)
	}
	out := make([]float64, n)
	for i, v := range vals {
		if v == nil {
			return nil, fmt.Errorf("row %d, column %q: empty value", i, c.name)
		}
		x, ok := toFloat(v)
		if !ok {
			return nil, fmt.Errorf("row %d, column %q: %T is not a number", i, c.name, v)
		}
		out[i] = x
	}
	return out, nil
}

// readList reads a list column of n rows, each of the same length p.
func readList(pr *reader.ParquetReader, c pqColumn, n int) ([]float64, int, error) {
	vals, rls, _, err := pr.ReadColumnByPath(c.inPath, int64(n))
	if err != nil {
		return nil, 0, fmt.Errorf("column %q: %w", c.name, err)
	}
	out := make([]float64, 0, len(vals))
	row, p, inRow := -1, 0, 0
	end := func() error {
		if row < 0 {
			return nil
		}
		if row == 0 {
			p = inRow
			if p == 0 {
				return fmt.Errorf("row 0, column %q: empty list", c.name)
			}
		}
		if inRow != p {
			return fmt.Errorf("row %d, column %q: ragged rows: %d values, want %d", row, c.name, inRow, p)
		}
		return nil
	}
	for k, v := range vals {
		if rls[k] == 0 {
			if err := end(); err != nil {
				return nil, 0, err
			}
			row++
			inRow = 0
		}
		if v == nil { // a null list, an empty list or a null element
			return nil, 0, fmt.Errorf("row %d, column %q: empty value", row, c.name)
		}
		x, ok := toFloat(v)
		if !ok {
			return nil, 0, fmt.Errorf("row %d, column %q: %T is not a number", row, c.name, v)
		}
		out = append(out, x)
		inRow++
	}
	if err := end(); err != nil {
		return nil, 0, err
	}
	if row+1 != n {
		return nil, 0, fmt.Errorf("column %q: %d rows, want %d", c.name, row+1, n)
	}
	return out, p, nil
}
