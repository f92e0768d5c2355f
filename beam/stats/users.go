package stats

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
)

func init() {
	beam.RegisterCoder(reflect.TypeOf(UserOrder{}), encodeUserOrder, decodeUserOrder)
	beam.RegisterCoder(reflect.TypeOf(UserPos{}), encodeUserPos, decodeUserPos)
}

// errEmptyUserID refuses an empty user id.
var errEmptyUserID = errors.New("empty user id")

// UserKey returns the grouping key of a user id written as text, by the
// single-machine loader's rules for users CSV (dataio.Load): the id,
// trimmed of surrounding white space, must not be empty; an id that reads
// as a number must be an integer written canonically ("7", "-3"; not
// "7.0", "07", "+7", "7e0" or an integer beyond int64), so that one person
// cannot appear under two spellings of one number, and is refused with
// the loader's message otherwise; any other text is a name. The key is
// the trimmed text itself. Two rows therefore share a key exactly when
// the loader, reading both from one file, puts them in one user (it keys
// integer ids by their value, whose canonical spelling is unique, and
// names by their text), so a user's key does not depend on the sharding:
// the loader's numbering of names by first appearance, which is per file,
// never reaches the key. An integer id from a Parquet INT32 or INT64
// column has the key strconv.FormatInt(id, 10), as the same id written in
// a CSV file.
func UserKey(id string) (string, error) {
	s := strings.TrimSpace(id)
	if s == "" {
		return "", errEmptyUserID
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err == nil && strconv.FormatInt(v, 10) == s {
		return s, nil
	}
	if looksNumeric(s) || err == nil || errors.Is(err, strconv.ErrRange) {
		return "", fmt.Errorf("user id %q is a number not written as a canonical integer (write e.g. 1, not 1.0, 01 or +1): one user under two spellings would count as two users", s)
	}
	return s, nil
}

// looksNumeric reports whether the CSV reader reads s as a number: a
// decimal float (in or beyond the float64 range), not one with digit
// separators or a hexadecimal mantissa (which it refuses as ambiguous).
func looksNumeric(s string) bool {
	s = strings.TrimSpace(s)
	if strings.IndexByte(s, '_') >= 0 {
		return false
	}
	if t := strings.TrimLeft(s, "+-"); len(t) >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') {
		return false
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil || errors.Is(err, strconv.ErrRange)
}

// csvUserKeys returns the user key (UserKey) of each row of ds, the users
// data the single-machine loader read with lo from the CSV file at path
// (rows grouped by user), and the row's index in the file. The loader
// keeps integer ids but numbers names per file, and it reorders the rows,
// so the ids' text is read again from the file's user column; the loader
// has validated the file and refused every id UserKey refuses. The keys
// are checked to group the rows exactly as the loader did.
func csvUserKeys(path string, lo dataio.LoadOptions, ds *data.Dataset) (keys []string, pos []int, err error) {
	n := ds.N()
	text, err := csvColumnText(path, lo, n)
	if err != nil {
		return nil, nil, err
	}
	// The loader's ids: the integers when every id is one, else names
	// numbered by first appearance.
	ids := make([]int64, n)
	allInts := true
	for i, t := range text {
		if _, err := UserKey(t); err != nil {
			return nil, nil, fmt.Errorf("user column: row %d: %w", i+1, err)
		}
		v, err := strconv.ParseInt(t, 10, 64)
		ids[i] = v
		allInts = allInts && err == nil
	}
	if !allInts {
		seen := map[string]int64{}
		for i, t := range text {
			id, ok := seen[t]
			if !ok {
				id = int64(len(seen))
				seen[t] = id
			}
			ids[i] = id
		}
	}
	// Group the row numbers as the loader grouped the rows.
	order := &data.Dataset{Kind: data.Users, Y: make([]float64, n)}
	for i := range order.Y {
		order.Y[i] = float64(i)
	}
	if _, err := dataio.GroupByUser(order, ids); err != nil {
		return nil, nil, err
	}
	if !slices.Equal(order.UserStart, ds.UserStart) || !slices.Equal(order.UserIDs, ds.UserIDs) {
		return nil, nil, errors.New("user column: the ids read again do not group the rows as the reader did (internal error)")
	}
	keys, pos = make([]string, n), make([]int, n)
	for k, i := range order.Y {
		keys[k], pos[k] = text[int(i)], int(i)
	}
	return keys, pos, nil
}

// UserPos is a user's key (UserKey) and the position of its first row in
// the data the shards form (their rows concatenated in sorted path order):
// the index of the shard among the sorted paths and the row's index in the
// shard's file.
type UserPos struct {
	Key        string
	Int        int64 // the key's integer when IsInt
	IsInt      bool
	Shard, Row int
}

// NewUserPos returns the position of a user whose first row is row of
// shard.
func NewUserPos(key string, shard, row int) UserPos {
	v, err := strconv.ParseInt(key, 10, 64)
	return UserPos{Key: key, Int: v, IsInt: err == nil, Shard: shard, Row: row}
}

// UserOrder lists users in the order of their index in the single-machine
// data set of the one file holding every shard's rows in sorted path order
// (dataio.GroupByUser: increasing id): by integer id when every id is an
// integer, else, as the loader numbers text ids, by first appearance.
type UserOrder struct {
	// AllInts says that every id is an integer.
	AllInts bool
	// Users are the users, in index order.
	Users []UserPos
}

// NewUserOrder orders users (each listed once).
func NewUserOrder(users []UserPos) UserOrder {
	o := UserOrder{AllInts: !slices.ContainsFunc(users, func(u UserPos) bool { return !u.IsInt }), Users: users}
	slices.SortFunc(o.Users, o.compare)
	return o
}

func (o UserOrder) compare(a, b UserPos) int {
	if o.AllInts {
		return cmp.Compare(a.Int, b.Int)
	}
	if c := cmp.Compare(a.Shard, b.Shard); c != 0 {
		return c
	}
	return cmp.Compare(a.Row, b.Row)
}

// Index returns u's index among the users (false if u is not one).
func (o UserOrder) Index(u UserPos) (int, bool) {
	i, ok := slices.BinarySearchFunc(o.Users, u, o.compare)
	return i, ok && o.Users[i].Key == u.Key
}

// userIdentityInt is the integer a user key adds to a source identity:
// an integer id itself; a text id (from a Parquet text column, which has
// no single-machine twin) the first 8 bytes of the SHA-256 of its text.
func userIdentityInt(key string) int64 {
	if v, err := strconv.ParseInt(key, 10, 64); err == nil {
		return v
	}
	h := sha256.Sum256([]byte("dplr user id\x00" + key))
	return int64(binary.LittleEndian.Uint64(h[:8]))
}

// Coders: named functions (the SDK resolves coders by symbol name, which
// instantiations of one generic function share).
func encodeUserOrder(v UserOrder) ([]byte, error) { return encodeGob(v) }
func decodeUserOrder(b []byte) (UserOrder, error) { return decodeGob[UserOrder](b) }
func encodeUserPos(v UserPos) ([]byte, error)     { return encodeGob(v) }
func decodeUserPos(b []byte) (UserPos, error)     { return decodeGob[UserPos](b) }

// csvColumnText returns the trimmed text of the user column (lo.UserColumn,
// default "user") of each of the n data records of the CSV file at path
// (gzip or not), which the single-machine loader has read: the same
// dialect, and a header exactly when the file holds n+1 records.
func csvColumnText(path string, lo dataio.LoadOptions, n int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	var r io.Reader = br
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		defer gz.Close()
		r = gz
	}
	cr := csv.NewReader(r)
	switch {
	case lo.Delimiter != 0:
		cr.Comma = lo.Delimiter
	case strings.HasSuffix(strings.TrimSuffix(path, ".gz"), ".tsv"):
		cr.Comma = '\t'
	}
	cr.TrimLeadingSpace = true
	first, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("csv: %w", err)
	}
	ref := lo.UserColumn
	if ref == "" {
		ref = "user"
	}
	header := make([]string, len(first))
	for j, h := range first {
		h = strings.TrimSpace(h)
		if j == 0 {
			h = strings.TrimSpace(strings.TrimPrefix(h, "#"))
		}
		header[j] = h
	}
	withHeader, errH := resolveCSVColumn(header, len(first), ref)
	without, errN := resolveCSVColumn(nil, len(first), ref)
	var colH, colN []string
	if errN == nil {
		colN = append(colN, strings.TrimSpace(first[without]))
	}
	cr.ReuseRecord = true
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("csv: %w", err)
		}
		if errH == nil {
			colH = append(colH, strings.TrimSpace(rec[withHeader]))
		}
		if errN == nil {
			colN = append(colN, strings.TrimSpace(rec[without]))
		}
	}
	switch {
	case errH == nil && len(colH) == n:
		return colH, nil
	case errN == nil && len(colN) == n:
		return colN, nil
	}
	return nil, fmt.Errorf("user column %q: not found again in the %d rows the reader read (internal error)", ref, n)
}

// resolveCSVColumn resolves a column reference as the single-machine
// loader does: a header name (exact, then case-insensitive) or a 0-based
// index.
func resolveCSVColumn(header []string, ncol int, ref string) (int, error) {
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
	if i, err := strconv.Atoi(ref); err == nil && i >= 0 && i < ncol {
		return i, nil
	}
	return 0, fmt.Errorf("no column %q", ref)
}
