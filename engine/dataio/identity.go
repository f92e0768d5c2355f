package dataio

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/dplr/dplr/engine/data"
)

// identityPrefix versions the source-identity encoding documented in the
// package comment.
const identityPrefix = "dplr-source-v1\n"

// SketchSize is the number of row hashes kept in an Identity's sketch (the
// k of the bottom-k sketch).
const SketchSize = 256

// sketchBits is the resolution of the rounding applied before a row enters
// the sketch: each main-file value v of a row whose largest magnitude is s
// is replaced by round(v/s·2^sketchBits), about six significant digits
// relative to the row's scale.
const sketchBits = 20

// Identity names the source records of a data set, independently of how
// they are viewed: it is computed from the main file's records (and the
// side files' values) before scaling, column selection, header choice or
// kind are applied, so that every view of one file is charged to one
// budget.
type Identity struct {
	// Hash is the lower-case hex SHA-256 of the source's row multiset (see
	// the package documentation): a shuffled copy, a copy in another file
	// format or a float32 copy of float32-representable values hash the
	// same; any other change of a value gives another hash.
	Hash string `json:"hash"`
	// Rows is the number of source records hashed.
	Rows int64 `json:"rows"`
	// Sketch holds the SketchSize smallest distinct 64-bit hashes of the
	// rows after rounding (fewer if the source has fewer distinct rounded
	// rows), in increasing order. SketchContainmentSample compares two sketches
	// to detect partial or slightly edited copies, which Hash cannot.
	Sketch []uint64 `json:"sketch"`
}

// Check validates an identity's form.
func (id Identity) Check() error {
	if b, err := hex.DecodeString(id.Hash); err != nil || len(b) != 32 {
		return fmt.Errorf("identity hash %q is not a hex SHA-256", id.Hash)
	}
	if id.Rows < 1 {
		return fmt.Errorf("identity: %d rows", id.Rows)
	}
	if len(id.Sketch) == 0 || len(id.Sketch) > SketchSize {
		return fmt.Errorf("identity: sketch of %d hashes, want 1 to %d", len(id.Sketch), SketchSize)
	}
	if int64(len(id.Sketch)) > id.Rows {
		return fmt.Errorf("identity: sketch of %d hashes for %d rows", len(id.Sketch), id.Rows)
	}
	for i := 1; i < len(id.Sketch); i++ {
		if id.Sketch[i] <= id.Sketch[i-1] {
			return errors.New("identity: sketch not strictly increasing")
		}
	}
	return nil
}

// SketchContainmentSample estimates the fraction c of the distinct rounded
// rows of source A that also occur in source B from their bottom-k
// sketches a and b (sorted, distinct, as in Identity.Sketch), and returns
// the number m of A's rows the estimate rests on: with probability 0.99
// the error is below sqrt(ln(200)/(2m)), 0.102 for m = 256. m = 0 gives
// c = 0. docs/data.md derives the estimator and its error.
func SketchContainmentSample(a, b []uint64) (c float64, m int) {
	if len(a) == 0 || len(b) == 0 {
		return 0, 0
	}
	t := a[len(a)-1]
	if len(b) >= SketchSize && b[len(b)-1] < t {
		t = b[len(b)-1]
	}
	found := 0
	j := 0
	for _, h := range a {
		if h > t {
			break
		}
		m++
		for j < len(b) && b[j] < h {
			j++
		}
		if j < len(b) && b[j] == h {
			found++
		}
	}
	if m == 0 {
		return 0, 0
	}
	return float64(found) / float64(m), m
}

// Canonical encoding tags of values that are not plain float64 numbers.
// They are NaN bit patterns, which no accepted value has.
const (
	tagBigInt = 0x7ff8_0000_0000_0001 // followed by the int64
	tagText   = 0x7ff8_0000_0000_0002 // followed by the byte length and the bytes
)

// sideCol is one side-file column of a source: float values or integers
// (exactly one of the two is set).
type sideCol struct {
	f []float64
	i []int64
}

// idBuilder accumulates a source identity row by row.
type idBuilder struct {
	rows  int64
	sum   [4]uint64 // sum of row digests mod 2^256, little-endian limbs
	buf   []byte
	sk    sketcher
	sides []sideCol
	// keep appends the digest of every row (not of a hidden record) to
	// digs, in the order the rows are added: the content hash reads them.
	keep bool
	digs []byte
}

func newIDBuilder(sides ...sideCol) *idBuilder {
	return &idBuilder{sides: sides}
}

// canonBits returns the canonical bits of a value: its float64 bits, with
// -0 mapped to +0.
func canonBits(v float64) uint64 {
	if v == 0 {
		return 0
	}
	return math.Float64bits(v)
}

// appendInt appends an integer in canonical form: as a float64 when it
// converts exactly, else tagged.
func appendInt(b []byte, v int64) []byte {
	if v >= -1<<53 && v <= 1<<53 {
		return binary.LittleEndian.AppendUint64(b, canonBits(float64(v)))
	}
	b = binary.LittleEndian.AppendUint64(b, tagBigInt)
	return binary.LittleEndian.AppendUint64(b, uint64(v))
}

// row adds source row i whose main-file values are x (unscaled) and, for a
// CSV record, whose text fields are texts (in field order; textField.col
// is the number of numbers before the field). The side columns contribute
// their i-th values after the main row; i < 0 means the row has none (a
// record hidden by a forced header).
func (b *idBuilder) row(i int, x []float64, texts []textField) {
	sides := b.sides
	if i < 0 {
		sides = nil
	}
	// One pass for the row's scale (for the sketch) and for -0.
	s, negZero := 0.0, false
	for _, v := range x {
		if a := math.Abs(v); a > s {
			s = a
		}
		if math.Float64bits(v) == 1<<63 {
			negZero = true
		}
	}
	b.addDigest(i, b.digest(i, x, texts, sides, negZero))
	// Rounded hash for the sketch: each value as round(v/s·2^sketchBits).
	inv := 0.0
	if s > 0 {
		inv = (1 << sketchBits) / s
	}
	h := uint64(0x243f6a8885a308d3)
	switch {
	case math.IsInf(inv, 0):
		// A row of subnormal magnitudes: divide (v/s ≤ 1 stays finite).
		for _, v := range x {
			h = mixWord(h, uint64(int64(math.Round(v/s*(1<<sketchBits)))))
		}
		for _, tf := range texts {
			h = mixText(h, tf.s)
		}
	default:
		ti := 0
		for j, v := range x {
			for ti < len(texts) && texts[ti].col == j {
				h = mixText(h, texts[ti].s)
				ti++
			}
			h = mixWord(h, uint64(int64(math.Round(v*inv))))
		}
		for ; ti < len(texts); ti++ {
			h = mixText(h, texts[ti].s)
		}
	}
	b.addSketch(i, h, sides, len(x))
}

// byteRounding caches, per row scale s (the row's largest byte), the
// sketch's rounded values round(v·2^sketchBits/s) of the 256 byte values.
type byteRounding struct {
	tab [256]*[256]uint64
}

// byteRow is row for a source row of unsigned bytes raw, whose float64
// values are x: the same digest and sketch entry, with the sketch's
// rounding read from a table per row scale instead of computed per value.
func (b *idBuilder) byteRow(i int, raw []byte, x []float64, r *byteRounding) {
	sides := b.sides
	if i < 0 {
		sides = nil
	}
	var mx byte
	for _, v := range raw {
		mx = max(mx, v)
	}
	b.addDigest(i, b.digest(i, x, nil, sides, false))
	t := r.tab[mx]
	if t == nil {
		t = new([256]uint64)
		inv := 0.0
		if mx > 0 {
			inv = (1 << sketchBits) / float64(mx)
		}
		for v := range t {
			t[v] = uint64(int64(math.Round(float64(v) * inv)))
		}
		r.tab[mx] = t
	}
	h := uint64(0x243f6a8885a308d3)
	for _, v := range raw {
		h = mixWord(h, t[v])
	}
	b.addSketch(i, h, sides, len(raw))
}

// digest is the SHA-256 of the canonical bytes of a row (its values, text
// fields and side values). A row of plain numbers without -0 is hashed in
// place.
func (b *idBuilder) digest(i int, x []float64, texts []textField, sides []sideCol, negZero bool) [32]byte {
	if len(texts) == 0 && len(sides) == 0 && nativeLE && !negZero {
		if len(x) > 0 {
			return sha256.Sum256(unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 8*len(x)))
		}
		return sha256.Sum256(nil)
	}
	buf := b.buf[:0]
	ti := 0
	for j, v := range x {
		for ti < len(texts) && texts[ti].col == j {
			buf = appendText(buf, texts[ti].s)
			ti++
		}
		buf = binary.LittleEndian.AppendUint64(buf, canonBits(v))
	}
	for ; ti < len(texts); ti++ {
		buf = appendText(buf, texts[ti].s)
	}
	for _, s := range sides {
		if s.f != nil {
			buf = binary.LittleEndian.AppendUint64(buf, canonBits(s.f[i]))
		} else {
			buf = appendInt(buf, s.i[i])
		}
	}
	b.buf = buf
	return sha256.Sum256(buf)
}

// addDigest adds the digest of row i to the running sum, counts the row
// and keeps the digest if asked (not for a hidden record, i < 0).
func (b *idBuilder) addDigest(i int, d [32]byte) {
	if b.keep && i >= 0 {
		b.digs = append(b.digs, d[:]...)
	}
	var c uint64
	for k := 0; k < 4; k++ {
		b.sum[k], c = bits.Add64(b.sum[k], binary.LittleEndian.Uint64(d[8*k:]), c)
	}
	b.rows++
}

// addSketch finishes a row's rounded hash h (its main values mixed in)
// with the side values and the row length, and offers it to the sketch.
func (b *idBuilder) addSketch(i int, h uint64, sides []sideCol, length int) {
	for _, sc := range sides {
		if sc.f != nil {
			h = mixWord(h, roundSig(sc.f[i]))
		} else {
			h = mixWord(h, uint64(sc.i[i]))
		}
	}
	b.sk.add(fmix64(h ^ uint64(length)))
}

// textField is one text field of a CSV record.
type textField struct {
	col int
	s   string
}

func appendText(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint64(b, tagText)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

// roundSig rounds v to sketchBits significant bits and returns the bits of
// the result (0 for zero and for magnitudes below 2^-1000).
func roundSig(v float64) uint64 {
	if math.Abs(v) < 0x1p-1000 {
		return 0
	}
	frac, exp := math.Frexp(v)
	return canonBits(math.Ldexp(math.Round(frac*(1<<sketchBits)), exp-sketchBits))
}

// mixWord folds a 64-bit word into a running hash (one multiply; the
// row's hash is finished by fmix64).
func mixWord(h, w uint64) uint64 {
	h = (h ^ w) * 0x9e3779b97f4a7c15
	return h ^ h>>32
}

func mixText(h uint64, s string) uint64 {
	h = mixWord(h, tagText^uint64(len(s)))
	for i := 0; i < len(s); i += 8 {
		var w [8]byte
		copy(w[:], s[i:])
		h = mixWord(h, binary.LittleEndian.Uint64(w[:]))
	}
	return h
}

// fmix64 is the finaliser of MurmurHash3: a bijection of 64-bit words with
// good avalanche.
func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// finish returns the identity.
func (b *idBuilder) finish() Identity {
	h := sha256.New()
	h.Write([]byte(identityPrefix))
	var w [8]byte
	binary.LittleEndian.PutUint64(w[:], uint64(b.rows))
	h.Write(w[:])
	for _, l := range b.sum {
		binary.LittleEndian.PutUint64(w[:], l)
		h.Write(w[:])
	}
	return Identity{Hash: hex.EncodeToString(h.Sum(nil)), Rows: b.rows, Sketch: b.sk.sorted()}
}

// sketcher keeps the SketchSize smallest distinct values added, in
// increasing order.
type sketcher struct {
	vals []uint64
}

func (s *sketcher) add(h uint64) {
	if len(s.vals) == SketchSize && h >= s.vals[SketchSize-1] {
		return
	}
	i, found := slices.BinarySearch(s.vals, h)
	if found {
		return
	}
	s.vals = slices.Insert(s.vals, i, h)
	if len(s.vals) > SketchSize {
		s.vals = s.vals[:SketchSize]
	}
}

func (s *sketcher) sorted() []uint64 { return slices.Clone(s.vals) }

// addMatrix hashes the rows of an n×p row-major matrix of unscaled
// source values.
func (b *idBuilder) addMatrix(x []float64, n, p int) {
	for i := 0; i < n; i++ {
		b.row(i, x[i*p:(i+1)*p], nil)
	}
}

// addTable hashes a CSV table: every record (and a numeric first record
// that a forced header hid), with its fields that read as numbers as
// numbers and its other fields as text, in file order.
func (b *idBuilder) addTable(t *table) {
	x := make([]float64, 0, t.ncol)
	var texts []textField
	// field adds one field: a number where it parses (a text column's
	// numbers count as numbers, so that reading the file as another kind
	// keeps its identity), else text.
	field := func(f string) {
		if v, ok := parseFinite(f); ok {
			x = append(x, v)
		} else {
			texts = append(texts, textField{col: len(x), s: f})
		}
	}
	if t.hidden != nil {
		// The hidden record has no value in the side files.
		for _, f := range t.hidden {
			field(f)
		}
		b.row(-1, x, texts)
	}
	textOf := make([][]string, t.ncol) // the text columns, by index
	for c, col := range t.text {
		textOf[c] = col
	}
	for i := 0; i < t.nrow; i++ {
		x, texts = x[:0], texts[:0]
		for j, v := range t.vals[i*t.ncol : (i+1)*t.ncol] {
			if col := textOf[j]; col != nil {
				field(col[i])
			} else {
				x = append(x, v)
			}
		}
		b.row(i, x, texts)
	}
}

// IdentityOf returns the identity of an in-memory data set taken as its
// own source: its rows of X with, per row, the response, the user id and
// the label where present (the order array sources use).
func IdentityOf(ds *data.Dataset) Identity { return ownBuilder(ds.WithDenseX(), false).finish() }

// RowUserIDs returns the user id of each row of ds: nil unless ds has
// users, one id for each.
func RowUserIDs(ds *data.Dataset) []int64 {
	u := ds.NumUsers()
	if u == 0 || len(ds.UserIDs) != u || len(ds.UserStart) != u+1 {
		return nil
	}
	ids := make([]int64, ds.N())
	for k := 0; k < u; k++ {
		for i := ds.UserStart[k]; i < ds.UserStart[k+1] && i < len(ids); i++ {
			ids[i] = ds.UserIDs[k]
		}
	}
	return ids
}

// ownBuilder hashes the rows of ds taken as its own source (IdentityOf),
// keeping the row digests if keep.
func ownBuilder(ds *data.Dataset, keep bool) *idBuilder {
	if ds == nil || ds.X == nil || ds.X.IsEmpty() {
		return newIDBuilder()
	}
	sides := sideCols(ds, RowUserIDs(ds))
	n, p := ds.X.Dims()
	for _, s := range sides {
		if (s.f != nil && len(s.f) != n) || (s.i != nil && len(s.i) != n) {
			sides = nil // malformed; checkStructure reports it
			break
		}
	}
	b := newIDBuilder(sides...)
	b.keep = keep
	raw := ds.X.RawMatrix()
	for i := 0; i < n; i++ {
		b.row(i, raw.Data[i*raw.Stride:i*raw.Stride+p], nil)
	}
	return b
}
