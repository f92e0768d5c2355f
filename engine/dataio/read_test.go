package dataio

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
)

// TestNPYDtypes reads every supported dtype, in both storage orders and
// both header versions, and checks the values and the content hash.
func TestNPYDtypes(t *testing.T) {
	dir := t.TempDir()
	want := seq(6, 1, 1) // 1..6 as a 2×3 matrix
	le, be := binary.LittleEndian, binary.BigEndian
	cases := []struct {
		name    string
		major   byte
		descr   string
		fortran bool
		payload []byte
	}{
		{"f8", 1, "<f8", false, encode(le, want)},
		{"f8 v2", 2, "<f8", false, encode(le, want)},
		{"f8 v3", 3, "<f8", false, encode(le, want)},
		{"f8 fortran", 1, "<f8", true, encode(le, transposeF(want, 2, 3))},
		{"f8 big-endian", 1, ">f8", false, encode(be, want)},
		{"f4", 1, "<f4", false, encode(le, f32s(want))},
		{"f4 fortran", 1, "<f4", true, encode(le, f32s(transposeF(want, 2, 3)))},
		{"u1", 1, "|u1", false, []byte{1, 2, 3, 4, 5, 6}},
		{"u1 fortran", 1, "|u1", true, []byte{1, 4, 2, 5, 3, 6}},
		{"i1", 1, "|i1", false, []byte{1, 2, 3, 4, 5, 6}},
		{"i2", 1, "<i2", false, encode(le, []int16{1, 2, 3, 4, 5, 6})},
		{"u2 big", 1, ">u2", false, encode(be, []uint16{1, 2, 3, 4, 5, 6})},
		{"i4", 1, "<i4", false, encode(le, []int32{1, 2, 3, 4, 5, 6})},
		{"u4", 1, "<u4", false, encode(le, []uint32{1, 2, 3, 4, 5, 6})},
		{"i8", 1, "<i8", false, encode(le, []int64{1, 2, 3, 4, 5, 6})},
		{"i8 fortran", 1, "<i8", true, encode(le, []int64{1, 4, 2, 5, 3, 6})},
		{"u8", 1, "<u8", false, encode(le, []uint64{1, 2, 3, 4, 5, 6})},
	}
	var hash string
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeTemp(t, dir, "a.npy", npyFile(c.major, c.descr, c.fortran, []int{2, 3}, c.payload))
			ds, err := Load(p, LoadOptions{})
			require.NoError(t, err)
			require.NoError(t, ds.Validate())
			n, pp := ds.X.Dims()
			require.Equal(t, [2]int{2, 3}, [2]int{n, pp})
			assert.Equal(t, want, ds.X.RawMatrix().Data)
			if hash == "" {
				hash = ds.Hash
			}
			assert.Equal(t, hash, ds.Hash, "same content, same hash")
		})
	}
}

// TestNPYRank3Fortran checks the general Fortran-to-C reordering.
func TestNPYRank3Fortran(t *testing.T) {
	dir := t.TempDir()
	// C-order value at (i,a,b) is 100i+10a+b, shape 2×3×4.
	shape := []int{2, 3, 4}
	c := make([]float64, 24)
	f := make([]float64, 24)
	for i := 0; i < 2; i++ {
		for a := 0; a < 3; a++ {
			for b := 0; b < 4; b++ {
				v := float64(100*i + 10*a + b)
				c[i*12+a*4+b] = v
				f[i+2*a+6*b] = v
			}
		}
	}
	pc := writeTemp(t, dir, "c.npy", npyFile(1, "<f8", false, shape, encode(binary.LittleEndian, c)))
	pf := writeTemp(t, dir, "f.npy", npyFile(1, "<f8", true, shape, encode(binary.LittleEndian, f)))
	y := writeTemp(t, dir, "y.csv", []byte("1\n2\n"))
	a, err := Load(pc, LoadOptions{Kind: data.Trace, ResponsePath: y})
	require.NoError(t, err)
	b, err := Load(pf, LoadOptions{Kind: data.Trace, ResponsePath: y})
	require.NoError(t, err)
	assert.Equal(t, c, a.X.RawMatrix().Data)
	assert.Equal(t, c, b.X.RawMatrix().Data)
	assert.Equal(t, a.Hash, b.Hash)
	assert.Equal(t, [2]int{3, 4}, [2]int{a.D1, a.D2})
	assert.Equal(t, 123.0, a.Sample(1).At(2, 3))
}

// TestIDX reads IDX files of every element type, plain and gzip.
func TestIDX(t *testing.T) {
	dir := t.TempDir()
	want := seq(6, 1, 1)
	be := binary.BigEndian
	cases := []struct {
		name    string
		typ     byte
		payload []byte
	}{
		{"ubyte", 0x08, []byte{1, 2, 3, 4, 5, 6}},
		{"sbyte", 0x09, []byte{1, 2, 3, 4, 5, 6}},
		{"short", 0x0B, encode(be, []int16{1, 2, 3, 4, 5, 6})},
		{"int", 0x0C, encode(be, []int32{1, 2, 3, 4, 5, 6})},
		{"float", 0x0D, encode(be, f32s(want))},
		{"double", 0x0E, encode(be, want)},
	}
	for _, c := range cases {
		for _, zip := range []bool{false, true} {
			name := c.name
			content := idxFile(c.typ, []int{2, 3}, c.payload)
			file := "a.idx"
			if zip {
				name += " gzip"
				content = gz(content)
				file += ".gz"
			}
			t.Run(name, func(t *testing.T) {
				p := writeTemp(t, dir, file, content)
				ds, err := Load(p, LoadOptions{})
				require.NoError(t, err)
				assert.Equal(t, want, ds.X.RawMatrix().Data)
			})
		}
	}
	// Rank 3 flattens to n×(d1·d2); negative sbyte survives.
	p := writeTemp(t, dir, "neg.idx", idxFile(0x09, []int{2, 1, 2}, []byte{0xff, 0, 1, 0x80}))
	ds, err := Load(p, LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, []float64{-1, 0, 1, -128}, ds.X.RawMatrix().Data)
}

// TestFashionMNIST loads the Debian package's files directly.
func TestFashionMNIST(t *testing.T) {
	const dir = "/usr/share/datasets/fashion-mnist"
	img := filepath.Join(dir, "t10k-images-idx3-ubyte.gz")
	if _, err := os.Stat(img); err != nil {
		t.Skip("dataset-fashion-mnist not installed")
	}
	ds, err := Load(img, LoadOptions{Scale: 1.0 / 255, LabelsPath: filepath.Join(dir, "t10k-labels-idx1-ubyte.gz")})
	require.NoError(t, err)
	n, p := ds.X.Dims()
	assert.Equal(t, 10000, n)
	assert.Equal(t, 784, p)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range ds.X.RawMatrix().Data {
		lo, hi = min(lo, v), max(hi, v)
	}
	assert.Equal(t, 0.0, lo)
	assert.Equal(t, 1.0, hi)
	counts := map[int]int{}
	for _, l := range ds.Labels {
		counts[l]++
	}
	assert.Len(t, counts, 10)
	for c, k := range counts {
		assert.Equal(t, 1000, k, "class %d", c)
	}
	f, gzipped, err := DetectFormat(img)
	require.NoError(t, err)
	assert.Equal(t, FormatIDX, f)
	assert.True(t, gzipped)
}

// TestCSVHeaderDetection covers the header heuristic and overrides.
func TestCSVHeaderDetection(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name    string
		content string
		header  HeaderMode
		n, p    int
		first   float64
	}{
		{"no header", "1,2\n3,4\n", HeaderAuto, 2, 2, 1},
		{"header", "a,b\n1,2\n3,4\n", HeaderAuto, 2, 2, 1},
		{"numpy savetxt header", "# a,b\n1,2\n3,4\n", HeaderAuto, 2, 2, 1},
		{"numeric header forced", "10,20\n1,2\n", HeaderYes, 1, 2, 1},
		{"spaces and CRLF", " 1 , 2\r\n3,4\r\n", HeaderAuto, 2, 2, 1},
		{"scientific", "1e-3,2E2\n-3,+4\n", HeaderAuto, 2, 2, 1e-3},
		{"single column", "x\n5\n6\n7\n", HeaderAuto, 3, 1, 5},
		{"byte order mark", "\xef\xbb\xbf1,2\n3,4\n", HeaderAuto, 2, 2, 1},
		{"byte order mark and header", "\xef\xbb\xbfa,b\n3,4\n", HeaderAuto, 1, 2, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeTemp(t, dir, "a.csv", []byte(c.content))
			ds, err := Load(p, LoadOptions{Header: c.header})
			require.NoError(t, err)
			n, pp := ds.X.Dims()
			assert.Equal(t, [2]int{c.n, c.p}, [2]int{n, pp})
			assert.Equal(t, c.first, ds.X.At(0, 0))
		})
	}
	// Tab-separated by extension.
	p := writeTemp(t, dir, "a.tsv", []byte("1\t2\n3\t4\n"))
	ds, err := Load(p, LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, 4.0, ds.X.At(1, 1))
}

// TestRowsLabelsAndScale: label column, label file, scale.
func TestRowsLabelsAndScale(t *testing.T) {
	dir := t.TempDir()
	p := writeTemp(t, dir, "a.csv", []byte("x1,label,x2\n2,0,4\n6,1,8\n"))
	ds, err := Load(p, LoadOptions{LabelColumn: "label", Scale: 0.5})
	require.NoError(t, err)
	assert.Equal(t, []float64{1, 2, 3, 4}, ds.X.RawMatrix().Data)
	assert.Equal(t, []int{0, 1}, ds.Labels)

	lp := writeTemp(t, dir, "l.npy", npyFile(1, "<i8", false, []int{2}, encode(binary.LittleEndian, []int64{7, 9})))
	x := writeTemp(t, dir, "x.csv", []byte("1,2\n3,4\n"))
	ds, err = Load(x, LoadOptions{LabelsPath: lp})
	require.NoError(t, err)
	assert.Equal(t, []int{7, 9}, ds.Labels)

	bad := writeTemp(t, dir, "bad.csv", []byte("0.5\n1\n"))
	_, err = Load(x, LoadOptions{LabelsPath: bad})
	assert.ErrorContains(t, err, "not an integer")
	short := writeTemp(t, dir, "short.csv", []byte("1\n"))
	_, err = Load(x, LoadOptions{LabelsPath: short})
	assert.ErrorContains(t, err, "1 values for 2 rows")
}

// TestTrace covers the CSV and array layouts of trace-regression data.
func TestTrace(t *testing.T) {
	dir := t.TempDir()
	csvPath := writeTemp(t, dir, "t.csv", []byte("a,b,c,d,e,f,y\n1,2,3,4,5,6,0.5\n7,8,9,10,11,12,-1\n"))
	a, err := Load(csvPath, LoadOptions{Kind: data.Trace, D1: 2, D2: 3})
	require.NoError(t, err)
	require.NoError(t, a.Validate())
	assert.Equal(t, []float64{0.5, -1}, a.Y)
	assert.Equal(t, 6.0, a.Sample(0).At(1, 2))

	// Only d2 given: d1 inferred.
	b, err := Load(csvPath, LoadOptions{Kind: data.Trace, D2: 3})
	require.NoError(t, err)
	assert.Equal(t, 2, b.D1)
	assert.Equal(t, a.Hash, b.Hash)

	x := writeTemp(t, dir, "x.npy", npyFile(1, "<f8", false, []int{2, 2, 3}, encode(binary.LittleEndian, seq(12, 1, 1))))
	y := writeTemp(t, dir, "y.npy", npyFile(1, "<f8", false, []int{2}, encode(binary.LittleEndian, []float64{0.5, -1})))
	c, err := Load(x, LoadOptions{Kind: data.Trace, ResponsePath: y})
	require.NoError(t, err)
	assert.Equal(t, a.Hash, c.Hash, "CSV and npy of the same trace data hash alike")

	_, err = Load(csvPath, LoadOptions{Kind: data.Trace})
	assert.ErrorContains(t, err, "give d1 and d2")
	_, err = Load(csvPath, LoadOptions{Kind: data.Trace, D1: 4, D2: 4})
	assert.ErrorContains(t, err, "do not hold 4×4")
	_, err = Load(x, LoadOptions{Kind: data.Trace})
	assert.ErrorContains(t, err, "needs a response file")
	_, err = Load(x, LoadOptions{Kind: data.Trace, ResponsePath: y, D1: 3})
	assert.ErrorContains(t, err, "does not hold 3×0")
}

// TestUsers covers grouping (stable, by id), column choices and the npy
// variant.
func TestUsers(t *testing.T) {
	dir := t.TempDir()
	content := "x1,user,x2,y\n1,20,1,0.1\n2,10,2,0.2\n3,20,3,0.3\n4,30,4,0.4\n5,10,5,0.5\n"
	p := writeTemp(t, dir, "u.csv", []byte(content))
	ds, err := Load(p, LoadOptions{Kind: data.Users})
	require.NoError(t, err)
	require.NoError(t, ds.Validate())
	assert.Equal(t, []int{0, 2, 4, 5}, ds.UserStart)
	assert.Equal(t, []int64{10, 20, 30}, ds.UserIDs)
	assert.Equal(t, []float64{0.2, 0.5, 0.1, 0.3, 0.4}, ds.Y)
	assert.Equal(t, []float64{2, 2, 5, 5, 1, 1, 3, 3, 4, 4}, ds.X.RawMatrix().Data)

	// Headerless: the user column must be named; response last by default.
	q := writeTemp(t, dir, "u2.csv", []byte("20,1,1,0.1\n10,2,2,0.2\n20,3,3,0.3\n30,4,4,0.4\n10,5,5,0.5\n"))
	_, err = Load(q, LoadOptions{Kind: data.Users})
	require.ErrorIs(t, err, ErrUserColumn)
	ds2, err := Load(q, LoadOptions{Kind: data.Users, UserColumn: "0"})
	require.NoError(t, err)
	assert.Equal(t, Hash(ds), Hash(ds2), "the same content")
	assert.NotEqual(t, ds.Hash, ds2.Hash, "read from records laid out otherwise")

	// Named columns and string ids (numbered by first appearance).
	r := writeTemp(t, dir, "u3.csv", []byte("id,resp,f\nbob,1,7\nalice,2,8\nbob,3,9\n"))
	ds3, err := Load(r, LoadOptions{Kind: data.Users, UserColumn: "id", ResponseColumn: "resp"})
	require.NoError(t, err)
	assert.Equal(t, []int64{0, 1}, ds3.UserIDs)
	assert.Equal(t, []float64{7, 9, 8}, ds3.X.RawMatrix().Data)

	// npy variant.
	le := binary.LittleEndian
	xp := writeTemp(t, dir, "x.npy", npyFile(1, "<f8", false, []int{5, 2}, encode(le, []float64{1, 1, 2, 2, 3, 3, 4, 4, 5, 5})))
	yp := writeTemp(t, dir, "y.npy", npyFile(1, "<f8", false, []int{5}, encode(le, []float64{0.1, 0.2, 0.3, 0.4, 0.5})))
	up := writeTemp(t, dir, "u.npy", npyFile(1, "<i4", false, []int{5}, encode(le, []int32{20, 10, 20, 30, 10})))
	ds4, err := Load(xp, LoadOptions{Kind: data.Users, ResponsePath: yp, UsersPath: up})
	require.NoError(t, err)
	assert.Equal(t, Hash(ds), Hash(ds4), "the same content")
	last := writeTemp(t, dir, "u4.csv", []byte("x1,x2,y,user\n1,1,0.1,20\n2,2,0.2,10\n3,3,0.3,20\n4,4,0.4,30\n5,5,0.5,10\n"))
	ds5, err := Load(last, LoadOptions{Kind: data.Users})
	require.NoError(t, err)
	assert.Equal(t, ds5.Hash, ds4.Hash, "CSV and npy of the same records hash alike")

	_, err = Load(p, LoadOptions{Kind: data.Users, UserColumn: "nope"})
	assert.ErrorContains(t, err, `no column named "nope"`)
	_, err = Load(p, LoadOptions{Kind: data.Users, UserColumn: "y", ResponseColumn: "y"})
	assert.ErrorContains(t, err, "also the response")
	_, err = Load(xp, LoadOptions{Kind: data.Users})
	assert.ErrorContains(t, err, "needs a response file and a user id file")
}

// TestHashAcrossFormats: the same matrix from CSV, npy (f8, f4, Fortran)
// and IDX hashes identically; changing one value, the kind or the labels
// changes the hash.
func TestHashAcrossFormats(t *testing.T) {
	dir := t.TempDir()
	x := []float64{0, 1, 2, 3, 4, 5}
	files := []string{
		writeTemp(t, dir, "a.csv", []byte("0,1,2\n3,4,5\n")),
		writeTemp(t, dir, "a.npy", npyFile(1, "<f8", false, []int{2, 3}, encode(binary.LittleEndian, x))),
		writeTemp(t, dir, "b.npy", npyFile(1, "<f4", true, []int{2, 3}, encode(binary.LittleEndian, f32s(transposeF(x, 2, 3))))),
		writeTemp(t, dir, "a.idx.gz", gz(idxFile(0x08, []int{2, 3}, []byte{0, 1, 2, 3, 4, 5}))),
	}
	var hashes []string
	for _, f := range files {
		ds, err := Load(f, LoadOptions{})
		require.NoError(t, err, f)
		hashes = append(hashes, ds.Hash)
		assert.Equal(t, Hash(ds), ds.Hash)
	}
	for _, h := range hashes[1:] {
		assert.Equal(t, hashes[0], h)
	}
	ds, err := Load(files[0], LoadOptions{})
	require.NoError(t, err)
	ds.X.Set(1, 2, 5.000000001)
	assert.NotEqual(t, hashes[0], Hash(ds))
	ds.X.Set(1, 2, 5)
	ds.Labels = []int{0, 0}
	assert.NotEqual(t, hashes[0], Hash(ds))
	ds.Labels = nil
	ds.Kind = data.Trace
	assert.NotEqual(t, hashes[0], Hash(ds))
	assert.Len(t, hashes[0], 64)
}

// TestMalformed is the table of bad inputs: each must fail with an error
// naming the file and the problem (and never panic).
func TestMalformed(t *testing.T) {
	dir := t.TempDir()
	le := binary.LittleEndian
	good := npyFile(1, "<f8", false, []int{2, 2}, encode(le, []float64{1, 2, 3, 4}))
	cases := []struct {
		name    string
		file    string
		content []byte
		opt     LoadOptions
		want    string
	}{
		{"npy truncated magic", "a.npy", []byte("\x93NUM"), LoadOptions{}, "lacks the npy magic"},
		{"npy wrong magic forced", "a.bin", []byte("\x93NUMPX\x01\x00\x10\x00"), LoadOptions{Format: FormatNPY}, "bad magic"},
		{"npy truncated header", "a.npy", good[:30], LoadOptions{}, "truncated header"},
		{"npy truncated data", "a.npy", good[:len(good)-3], LoadOptions{}, "truncated"},
		{"npy trailing bytes", "a.npy", append(append([]byte{}, good...), 1, 2), LoadOptions{}, "trailing bytes"},
		{"npy bad version", "a.npy", append([]byte("\x93NUMPY\x09\x00"), good[8:]...), LoadOptions{}, "unsupported format version 9.0"},
		{"npy unsupported dtype", "a.npy", npyFile(1, "<c16", false, []int{1}, make([]byte, 16)), LoadOptions{}, "unsupported dtype"},
		{"npy structured dtype", "a.npy", []byte(npyMagic + "\x01\x00\x30\x00{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (1,), }\n"), LoadOptions{}, "structured"},
		{"npy missing shape", "a.npy", []byte(npyMagic + "\x01\x00\x2a\x00{'descr': '<f8', 'fortran_order': False}  \n"), LoadOptions{}, `missing key "shape"`},
		{"npy NaN", "a.npy", npyFile(1, "<f8", false, []int{2, 2}, encode(le, []float64{1, 2, nan, 4})), LoadOptions{}, "row 1, column 0: value NaN is not finite"},
		{"npy Inf f4", "a.npy", npyFile(1, "<f4", false, []int{2, 2}, encode(le, []float32{1, float32(math.Inf(1)), 3, 4})), LoadOptions{}, "row 0, column 1: value +Inf"},
		{"npy huge shape", "a.npy", npyFile(1, "<f8", false, []int{1 << 30, 1 << 20}, encode(le, []float64{1})), LoadOptions{MaxBytes: 1 << 62}, "only 8 are present"},
		{"npy overflowing shape", "a.npy", npyFile(1, "<f8", false, []int{1 << 40, 1 << 40}, nil), LoadOptions{}, "too large"},
		{"npy huge shape gzip", "a.npy.gz", gz(npyFile(1, "<f8", false, []int{1 << 30, 1 << 20}, encode(le, []float64{1}))), LoadOptions{}, "above the loading limit"},
		{"npy scalar", "a.npy", npyFile(1, "<f8", false, []int{}, encode(le, []float64{1})), LoadOptions{}, "scalar"},
		{"npy empty", "a.npy", npyFile(1, "<f8", false, []int{0, 3}, nil), LoadOptions{}, "empty array"},
		{"idx wrong type", "a.idx", []byte{0, 0, 0x07, 1, 0, 0, 0, 1, 5}, LoadOptions{Format: FormatIDX}, "unknown element type 0x07"},
		{"idx truncated dims", "a.idx", []byte{0, 0, 0x08, 3, 0, 0, 0, 1}, LoadOptions{}, "truncated dimensions"},
		{"idx truncated data", "a.idx", idxFile(0x08, []int{2, 3}, []byte{1, 2, 3}), LoadOptions{}, "only 3 are present"},
		{"idx huge shape", "a.idx", idxFile(0x0E, []int{0xffffffff, 0xffffffff, 0xffff}, []byte{1}), LoadOptions{}, "too large"},
		{"idx huge shape gzip", "a-idx3-ubyte.gz", gz(idxFile(0x08, []int{60000, 28, 28}, make([]byte, 100))), LoadOptions{}, "the compressed stream can hold at most"},
		{"idx huge shape gzip, tiny limit", "a-idx3-ubyte.gz", gz(idxFile(0x08, []int{60000, 28, 28}, make([]byte, 100))), LoadOptions{MaxBytes: 1 << 20}, "above the loading limit of 1.0 MiB"},
		{"idx NaN", "a.idx", idxFile(0x0D, []int{1, 2}, encode(binary.BigEndian, []float32{1, float32(math.NaN())})), LoadOptions{}, "not finite"},
		{"gzip corrupt", "a.csv.gz", gz([]byte("1,2\n3,4\n"))[:15], LoadOptions{}, "unexpected EOF"},
		{"gzip bad checksum", "a.csv.gz", func() []byte { b := gz([]byte("1,2\n3,4\n")); b[len(b)-6] ^= 1; return b }(), LoadOptions{}, "checksum"},
		{"csv ragged", "a.csv", []byte("1,2\n3,4\n5\n"), LoadOptions{}, "line 3"},
		{"csv ragged second", "a.csv", []byte("1,2\n3\n"), LoadOptions{}, "line 2"},
		{"csv NaN", "a.csv", []byte("a,b\n1,2\n3,NaN\n"), LoadOptions{}, `line 3, column 2 ("b"): value "NaN" is not finite`},
		{"csv Inf", "a.csv", []byte("1,inf\n"), LoadOptions{Header: HeaderNo}, "not finite"},
		{"csv text", "a.csv", []byte("1,2\n3,x\n"), LoadOptions{}, `"x" is not a number`},
		{"csv empty value", "a.csv", []byte("1,2\n3,\n"), LoadOptions{}, "empty value"},
		{"csv empty", "a.csv", []byte(""), LoadOptions{}, "empty file"},
		{"csv header only", "a.csv", []byte("a,b\n"), LoadOptions{}, "no data rows"},
		{"csv overflow", "a.csv", []byte("1,1e999\n"), LoadOptions{}, "out of the float64 range"},
		{"csv bad quote", "a.csv", []byte("1,\"2\n"), LoadOptions{}, "csv"},
		{"binary unknown", "a.dat", []byte{0, 1, 2, 3, 4, 5}, LoadOptions{}, "unrecognised binary format"},
		{"bad scale", "a.csv", []byte("1\n"), LoadOptions{Scale: math.Inf(1)}, "scale"},
		{"scale overflow", "a.csv", []byte("1e300\n"), LoadOptions{Scale: 1e300}, "not finite after scaling"},
		{"bad kind", "a.csv", []byte("1\n"), LoadOptions{Kind: "graph"}, "unknown data kind"},
		{"bad format", "a.csv", []byte("1\n"), LoadOptions{Format: "parquet"}, "unknown data format"},
		{"bad header mode", "a.csv", []byte("1\n"), LoadOptions{Header: "maybe"}, "unknown header mode"},
		{"missing file", "", nil, LoadOptions{}, "no such file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, "missing.csv")
			if c.content != nil {
				p = writeTemp(t, dir, c.file, c.content)
			}
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := Load(p, c.opt)
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			require.Error(t, err)
			assert.ErrorContains(t, err, c.want)
			assert.ErrorContains(t, err, filepath.Base(p), "the error names the file")
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20), "no absurd allocation")
		})
	}
}

// TestColumnsAndIntegers: feature column selection and integer side files.
func TestColumnsAndIntegers(t *testing.T) {
	dir := t.TempDir()
	p := writeTemp(t, dir, "a.csv", []byte("a,b,c,y\n1,2,3,4\n5,6,7,8\n"))
	ds, err := Load(p, LoadOptions{FeatureColumns: []string{"c", "0"}})
	require.NoError(t, err)
	assert.Equal(t, []float64{3, 1, 7, 5}, ds.X.RawMatrix().Data)
	tr, err := Load(p, LoadOptions{Kind: data.Trace, FeatureColumns: []string{"a", "b"}, D1: 1, D2: 2})
	require.NoError(t, err)
	assert.Equal(t, []float64{4, 8}, tr.Y)
	_, err = Load(p, LoadOptions{Kind: data.Trace, FeatureColumns: []string{"y"}, D1: 1, D2: 1})
	assert.ErrorContains(t, err, "both a feature and")
	_, err = Load(p, LoadOptions{FeatureColumns: []string{"9"}})
	assert.ErrorContains(t, err, "column index 9 out of range")

	le := binary.LittleEndian
	x := writeTemp(t, dir, "x.csv", []byte("1\n2\n"))
	cases := []struct {
		name    string
		content []byte
		want    []int
		err     string
	}{
		{"u8 too big", npyFile(1, "<u8", false, []int{2}, encode(le, []uint64{1, 1 << 63})), nil, "does not fit in int64"},
		{"float integral", npyFile(1, "<f4", false, []int{2, 1}, encode(le, []float32{3, -2})), []int{3, -2}, ""},
		{"float fractional", npyFile(1, "<f8", false, []int{2}, encode(le, []float64{3, 0.5})), nil, "not an integer"},
		{"matrix", npyFile(1, "<i4", false, []int{1, 2}, encode(le, []int32{3, 4})), nil, "want a vector"},
		{"idx labels", idxFile(0x08, []int{2}, []byte{7, 8}), []int{7, 8}, ""},
		{"two-column csv", []byte("1,2\n3,4\n"), nil, "want one column"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lp := writeTemp(t, dir, "lab.bin", c.content)
			ds, err := Load(x, LoadOptions{LabelsPath: lp})
			if c.err != "" {
				assert.ErrorContains(t, err, c.err)
				assert.ErrorContains(t, err, "lab.bin")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, ds.Labels)
		})
	}
}

// TestStreamedLoadMatchesPlain: the pipelined rows reader (several 1 MiB
// chunks, gzip and plain, u8 and f4 and f8) gives the same values and hash
// as the whole-file reader, whatever the number of workers.
func TestStreamedLoadMatchesPlain(t *testing.T) {
	dir := t.TempDir()
	const n, p = 1400, 784 // 1.1 MB of bytes, 4.4 MB of f4
	pix := make([]byte, n*p)
	state := uint32(1)
	for i := range pix {
		state = state*1664525 + 1013904223
		pix[i] = byte(state >> 24)
	}
	vals := make([]float64, n*p)
	for i, b := range pix {
		vals[i] = float64(b)/7 - 3
	}
	files := map[string][]byte{
		"u8.idx.gz": gz(idxFile(0x08, []int{n, 28, 28}, pix)),
		"u8.idx":    idxFile(0x08, []int{n, 28, 28}, pix),
		"f4.npy.gz": gz(npyFile(1, "<f4", false, []int{n, p}, encode(binary.LittleEndian, f32s(vals)))),
		"f8.npy":    npyFile(1, "<f8", false, []int{n, p}, encode(binary.LittleEndian, vals)),
		"f8be.npy":  npyFile(1, ">f8", false, []int{n, p}, encode(binary.BigEndian, vals)),
	}
	for name, content := range files {
		t.Run(name, func(t *testing.T) {
			path := writeTemp(t, dir, name, content)
			for _, scale := range []float64{1, 1.0 / 255} {
				plain, err := loadWhole(path, LoadOptions{Scale: scale}, &idSink{hash: true})
				require.NoError(t, err)
				for _, procs := range []int{1, 2, 5} {
					old := runtime.GOMAXPROCS(procs)
					streamed, err := Load(path, LoadOptions{Scale: scale})
					runtime.GOMAXPROCS(old)
					require.NoError(t, err)
					assert.True(t, slices.Equal(plain.X.RawMatrix().Data, streamed.X.RawMatrix().Data))
					assert.Equal(t, plain.Hash, streamed.Hash, "%d workers", procs)
				}
			}
		})
	}
	// A NaN in a late chunk is found and named.
	bad := append([]float64(nil), vals...)
	bad[n*p-2] = nan
	path := writeTemp(t, dir, "bad.npy.gz", gz(npyFile(1, "<f8", false, []int{n, p}, encode(binary.LittleEndian, bad))))
	_, err := Load(path, LoadOptions{})
	assert.ErrorContains(t, err, "row 1399, column 782: value NaN is not finite")
	// Truncated inside the stream.
	trunc := gz(idxFile(0x08, []int{n, 28, 28}, pix[:len(pix)-5]))
	path = writeTemp(t, dir, "trunc.idx.gz", trunc)
	_, err = Load(path, LoadOptions{})
	assert.ErrorContains(t, err, "truncated")
}

// TestGroupByUserErrors: mismatched lengths are errors, not panics.
func TestGroupByUserErrors(t *testing.T) {
	ds := &data.Dataset{Kind: data.Users, X: mat.NewDense(2, 1, []float64{1, 2}), Y: []float64{1, 2}}
	_, err := GroupByUser(ds, []int64{1})
	assert.ErrorContains(t, err, "1 user ids for 2 rows")
	ds.Labels = []int{1}
	_, err = GroupByUser(ds, []int64{1, 2})
	assert.ErrorContains(t, err, "2 user ids for 1 labels")
	ds.Labels = nil
	order, err := GroupByUser(ds, []int64{7, 3})
	require.NoError(t, err)
	assert.Equal(t, []int{1, 0}, order)
	assert.Equal(t, []float64{2, 1}, ds.X.RawMatrix().Data)
	assert.Equal(t, []int64{3, 7}, ds.UserIDs)
	assert.Equal(t, []int{0, 1, 2}, ds.UserStart)
}
