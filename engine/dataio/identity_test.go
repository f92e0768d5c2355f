package dataio

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
)

// identityRows returns n×p values that float32 represents exactly (so
// that a float32 copy holds the same numbers).
func identityRows(n, p int, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	x := make([]float64, n*p)
	for i := range x {
		x[i] = float64(float32(r.NormFloat64() * 3))
	}
	return x
}

// csvOf writes a matrix as CSV rows (shortest round-trip decimals), with
// an optional header line and the rows in the given order.
func csvOf(x []float64, n, p int, header string, order []int) []byte {
	var sb strings.Builder
	if header != "" {
		sb.WriteString(header + "\n")
	}
	for _, i := range order {
		for j := 0; j < p; j++ {
			if j > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(strconv.FormatFloat(x[i*p+j], 'g', -1, 64))
		}
		sb.WriteByte('\n')
	}
	return []byte(sb.String())
}

func identityOrder(n int) []int {
	o := make([]int, n)
	for i := range o {
		o[i] = i
	}
	return o
}

// sourceOf prepares path with opt in a fresh cache and returns the
// handle's source identity.
func sourceOf(t *testing.T, path string, opt LoadOptions) Identity {
	t.Helper()
	h, err := PrepareFile(path, opt, t.TempDir())
	require.NoError(t, err)
	require.NotNil(t, h.Source)
	require.NoError(t, h.Source.Check())
	require.NotNil(t, h.View)
	_, id, err := LoadIdentity(path, opt)
	require.NoError(t, err)
	assert.Equal(t, *h.Source, id, "Load and PrepareFile agree")
	return *h.Source
}

// TestSourceIdentityIgnoresViews: every view of one source (scaling,
// feature subsets and orders, a forced header, the kind read) and every
// faithful copy (shuffled rows, another format, a float32 copy, gzip,
// a header line) has the source's identity, while the view hash differs.
// On 992c541 each of these was a fresh data set with its own budget.
func TestSourceIdentityIgnoresViews(t *testing.T) {
	const n, p = 40, 4
	dir := t.TempDir()
	x := identityRows(n, p, 1)
	base := writeTemp(t, dir, "base.csv", csvOf(x, n, p, "", identityOrder(n)))
	rev := identityOrder(n)
	for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	shuffled := identityOrder(n)
	rand.New(rand.NewPCG(3, 4)).Shuffle(n, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	le := binary.LittleEndian
	want := sourceOf(t, base, LoadOptions{})
	cases := []struct {
		name string
		path string
		opt  LoadOptions
	}{
		{"scale up", base, LoadOptions{Scale: 1.0000001}},
		{"scale down", base, LoadOptions{Scale: 0.9999999}},
		{"features reordered", base, LoadOptions{FeatureColumns: []string{"3", "1", "0", "2"}}},
		{"features partial", base, LoadOptions{FeatureColumns: []string{"0", "1"}}},
		{"forced header", base, LoadOptions{Header: HeaderYes}},
		{"as trace data", base, LoadOptions{Kind: data.Trace, D1: 1, D2: 3}},
		{"reversed rows", writeTemp(t, dir, "rev.csv", csvOf(x, n, p, "", rev)), LoadOptions{}},
		{"shuffled rows", writeTemp(t, dir, "shuf.csv", csvOf(x, n, p, "", shuffled)), LoadOptions{}},
		{"header line", writeTemp(t, dir, "hdr.csv", csvOf(x, n, p, "a,b,c,d", identityOrder(n))), LoadOptions{}},
		{"gzip", writeTemp(t, dir, "base.csv.gz", gz(csvOf(x, n, p, "", identityOrder(n)))), LoadOptions{}},
		{"npy float64", writeTemp(t, dir, "x.npy", npyFile(1, "<f8", false, []int{n, p}, encode(le, x))), LoadOptions{}},
		{"npy float64 scaled", writeTemp(t, dir, "x2.npy", npyFile(1, "<f8", false, []int{n, p}, encode(le, x))), LoadOptions{Scale: 2}},
		{"npy float32", writeTemp(t, dir, "x32.npy", npyFile(1, "<f4", false, []int{n, p}, encode(le, f32s(x)))), LoadOptions{}},
		{"npy fortran order", writeTemp(t, dir, "xf.npy", npyFile(1, "<f8", true, []int{n, p}, encode(le, transposeF(x, n, p)))), LoadOptions{}},
		{"idx float32 gzip", writeTemp(t, dir, "x.idx.gz", gz(idxFile(0x0D, []int{n, p}, encode(binary.BigEndian, f32s(x))))), LoadOptions{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := sourceOf(t, c.path, c.opt)
			assert.Equal(t, want.Hash, got.Hash)
			assert.Equal(t, want.Sketch, got.Sketch)
			assert.Equal(t, int64(n), got.Rows)
		})
	}
}

// TestSourceIdentityImages: the same 8-bit images as IDX, as IDX with
// scale 1/255, as a uint8 .npy and as a float64 .npy of the pixel values
// are one source; a copy divided by 255 beforehand is another exact
// source but sketch-identical.
func TestSourceIdentityImages(t *testing.T) {
	const n, p = 30, 16
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(5, 6))
	pix := make([]byte, n*p)
	for i := range pix {
		pix[i] = byte(r.IntN(256))
	}
	vals := make([]float64, len(pix))
	scaled := make([]float64, len(pix))
	for i, b := range pix {
		vals[i] = float64(b)
		scaled[i] = float64(b) / 255
	}
	le := binary.LittleEndian
	idx := writeTemp(t, dir, "img-idx3-ubyte.gz", gz(idxFile(0x08, []int{n, 4, 4}, pix)))
	want := sourceOf(t, idx, LoadOptions{})
	for name, c := range map[string]struct {
		path string
		opt  LoadOptions
	}{
		"idx scaled": {idx, LoadOptions{Scale: 1.0 / 255}},
		"npy u1":     {writeTemp(t, dir, "u1.npy", npyFile(1, "|u1", false, []int{n, 4, 4}, pix)), LoadOptions{Scale: 1.0 / 255}},
		"npy f8":     {writeTemp(t, dir, "f8.npy", npyFile(1, "<f8", false, []int{n, p}, encode(le, vals))), LoadOptions{}},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, want, sourceOf(t, c.path, c.opt))
		})
	}
	pre := sourceOf(t, writeTemp(t, dir, "pre.npy", npyFile(1, "<f8", false, []int{n, p}, encode(le, scaled))), LoadOptions{})
	assert.NotEqual(t, want.Hash, pre.Hash, "different numbers are a different exact source")
	assert.Equal(t, 1.0, containment(pre.Sketch, want.Sketch), "rows equal up to their scale match in the sketch")
}

// TestSourceIdentityNearCopies: a one-ulp edit or a partial copy has
// another exact hash, and the sketch reports the overlap.
func TestSourceIdentityNearCopies(t *testing.T) {
	const n, p = 2000, 5
	dir := t.TempDir()
	le := binary.LittleEndian
	x := identityRows(n, p, 7)
	full := sourceOf(t, writeTemp(t, dir, "full.npy", npyFile(1, "<f8", false, []int{n, p}, encode(le, x))), LoadOptions{})

	ulp := append([]float64(nil), x...)
	ulp[17] = math.Nextafter(ulp[17], math.Inf(1))
	edited := sourceOf(t, writeTemp(t, dir, "ulp.npy", npyFile(1, "<f8", false, []int{n, p}, encode(le, ulp))), LoadOptions{})
	assert.NotEqual(t, full.Hash, edited.Hash)
	assert.Equal(t, full.Sketch, edited.Sketch, "a one-ulp edit keeps every rounded row")

	const m = 800 // 40% of the rows
	part := sourceOf(t, writeTemp(t, dir, "part.npy", npyFile(1, "<f8", false, []int{m, p}, encode(le, x[:m*p]))), LoadOptions{})
	assert.NotEqual(t, full.Hash, part.Hash)
	c, k := SketchContainmentSample(part.Sketch, full.Sketch)
	assert.Equal(t, 1.0, c, "every row of the part is in the whole")
	assert.Greater(t, k, SketchSize*m/n*8/10, "about k·|part|/|whole| rows sampled")
	c, k = SketchContainmentSample(full.Sketch, part.Sketch)
	assert.Greater(t, k, SketchSize*9/10)
	// Hoeffding at 99%: |ĉ − c| ≤ sqrt(ln(200)/(2k)).
	bound := math.Sqrt(math.Log(200) / (2 * float64(k)))
	assert.InDelta(t, float64(m)/n, c, bound, "k = %d", k)

	other := sourceOf(t, writeTemp(t, dir, "other.npy", npyFile(1, "<f8", false, []int{n, p}, encode(le, identityRows(n, p, 8)))), LoadOptions{})
	assert.Equal(t, 0.0, containment(other.Sketch, full.Sketch))
}

// TestSketchContainment checks the estimator on sketches built from
// known sets: exact when neither sketch is full, and within the stated
// Hoeffding bound (99%) otherwise.
func TestSketchContainment(t *testing.T) {
	build := func(lo, hi int) []uint64 {
		var s sketcher
		for i := lo; i < hi; i++ {
			s.add(fmix64(uint64(i)))
		}
		return s.sorted()
	}
	cases := []struct {
		name           string
		aLo, aHi       int
		bLo, bHi       int
		want           float64
		exact          bool
		minSampleCount int
	}{
		{"small exact half", 0, 100, 50, 150, 0.5, true, 100},
		{"small disjoint", 0, 100, 100, 200, 0, true, 100},
		{"subset", 0, 5000, 0, 20000, 1, false, SketchSize / 4 * 7 / 10},
		{"quarter", 0, 20000, 15000, 35000, 0.25, false, SketchSize * 9 / 10},
		{"tenth", 0, 10000, 9000, 19000, 0.1, false, SketchSize * 9 / 10},
		{"superset", 0, 20000, 0, 10000, 0.5, false, SketchSize * 9 / 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, m := SketchContainmentSample(build(c.aLo, c.aHi), build(c.bLo, c.bHi))
			assert.GreaterOrEqual(t, m, c.minSampleCount)
			if c.exact {
				assert.Equal(t, c.want, got)
				return
			}
			assert.InDelta(t, c.want, got, math.Sqrt(math.Log(200)/(2*float64(m))), "m = %d", m)
		})
	}
	assert.Equal(t, 0.0, containment(nil, build(0, 10)))
}

// TestIdentityCheck covers the identity's own validation.
func TestIdentityCheck(t *testing.T) {
	good := matrixBuilder([]float64{1, 2, 3, 4}, 2, 2).finish()
	require.NoError(t, good.Check())
	bad := good
	bad.Sketch = []uint64{good.Sketch[1], good.Sketch[0]}
	if good.Sketch[0] != good.Sketch[1] {
		assert.ErrorContains(t, bad.Check(), "increasing")
	}
	bad = good
	bad.Hash = "xyz"
	assert.Error(t, bad.Check())
	bad = good
	bad.Rows = 0
	assert.Error(t, bad.Check())
	assert.Equal(t, good, matrixBuilder([]float64{3, 4, 1, 2}, 2, 2).finish(), "row order does not matter")
	assert.NotEqual(t, good.Hash, matrixBuilder([]float64{1, 2, 3, 4, 1, 2}, 3, 2).finish().Hash, "multiplicity matters")
	assert.Equal(t, good.Hash, matrixBuilder([]float64{1, 2, 3, 4}, 2, 2).finish().Hash)
	assert.Equal(t, matrixBuilder([]float64{0, 1}, 1, 2).finish().Hash, matrixBuilder([]float64{math.Copysign(0, -1), 1}, 1, 2).finish().Hash, "-0 and +0 are one value")

}

// TestSourceIdentityKinds: one CSV read as rows, as trace and as users
// data is one source; text user ids are part of the record.
func TestSourceIdentityKinds(t *testing.T) {
	dir := t.TempDir()
	p := writeTemp(t, dir, "u.csv", []byte("user,x1,x2,y\n7,1,2,0.5\n3,4,5,0.25\n7,6,8,1\n"))
	rows := sourceOf(t, p, LoadOptions{})
	for name, opt := range map[string]LoadOptions{
		"users":          {Kind: data.Users},
		"trace":          {Kind: data.Trace, D1: 1, D2: 3},
		"users, scaled":  {Kind: data.Users, Scale: 3},
		"rows, features": {FeatureColumns: []string{"x2"}},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, rows, sourceOf(t, p, opt))
		})
	}
	named := sourceOf(t, writeTemp(t, dir, "n.csv", []byte("user,x1,x2,y\nbob,1,2,0.5\nann,4,5,0.25\nbob,6,8,1\n")), LoadOptions{Kind: data.Users})
	renamed := sourceOf(t, writeTemp(t, dir, "r.csv", []byte("user,x1,x2,y\nbob,1,2,0.5\neve,4,5,0.25\nbob,6,8,1\n")), LoadOptions{Kind: data.Users})
	assert.NotEqual(t, named.Hash, renamed.Hash, "user names are part of the records")
	assert.NotEqual(t, rows.Hash, named.Hash)
}

// TestSketchTinyRows: rows of subnormal magnitudes round like any other
// row (no infinite reciprocal), so a scaled copy keeps its sketch.
func TestSketchTinyRows(t *testing.T) {
	tiny := matrixBuilder([]float64{5e-324, 1e-323, 0}, 1, 3).finish()
	big := matrixBuilder([]float64{1, 2, 0}, 1, 3).finish()
	require.NoError(t, tiny.Check())
	assert.Equal(t, big.Sketch, tiny.Sketch, "the row is (1, 2, 0) up to its scale")
	assert.NotEqual(t, big.Hash, tiny.Hash)
}

// TestFashionMNISTIdentity: the Fashion-MNIST test images as IDX, as IDX
// with scale 1/255 and as a float64 .npy of the pixels are one source; a
// .npy of the pixels divided by 255 is another exact source whose sketch
// shows it holds the same images. On 992c541 these were three budgets.
func TestFashionMNISTIdentity(t *testing.T) {
	const path = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"
	if testing.Short() {
		t.Skip("short")
	}
	ds, id, err := LoadIdentity(path, LoadOptions{})
	if err != nil {
		t.Skipf("dataset-fashion-mnist not installed: %v", err)
	}
	_, scaled, err := LoadIdentity(path, LoadOptions{Scale: 1.0 / 255})
	require.NoError(t, err)
	assert.Equal(t, id, scaled)
	dir := t.TempDir()
	n, p := ds.X.Dims()
	pix := filepath.Join(dir, "pixels.npy")
	require.NoError(t, SaveNPYFloat64(pix, []int{n, p}, ds.X.RawMatrix().Data))
	_, fromNPY, err := LoadIdentity(pix, LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, id, fromNPY)
	div := make([]float64, n*p)
	for i, v := range ds.X.RawMatrix().Data {
		div[i] = v / 255
	}
	pre := filepath.Join(dir, "prescaled.npy")
	require.NoError(t, SaveNPYFloat64(pre, []int{n, p}, div))
	_, fromPre, err := LoadIdentity(pre, LoadOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, id.Hash, fromPre.Hash)
	assert.Equal(t, 1.0, containment(fromPre.Sketch, id.Sketch))
}

// TestSourceIdentityPinned: the source identity of fixed data, as recorded
// by main c0aeffd. Every budget in every ledger is keyed on this function
// (Identity.Hash, and the sketch that links near copies to it): a change
// that moves these values orphans budgets users already spent, so it must
// come with a migration of the ledger, never alone. The rows are bytes
// (decoded by data.DecodeBytes in a streamed preparation) and float64
// values with a tail of fewer than eight columns, read from gzip IDX,
// a uint8 .npy and a float64 .npy.
func TestSourceIdentityPinned(t *testing.T) {
	const n, p = 41, 27
	pix := make([]byte, n*p)
	vals := make([]float64, n*p)
	for i := range pix {
		pix[i] = byte(i*131 + i/7)
		vals[i] = float64(pix[i])*0.37 - 11
	}
	const ( // the same values as bytes, whichever the file and scale
		bytesHash   = "9228a523eb7577797d2da837584b2396bcb8a5c96b01213cf0b5dae578c2462e"
		bytesSketch = "424a9a9b3b18f1e3e8eca956fd18a92151a450714ac09694b80f93a9565d2b7e"
	)
	dir := t.TempDir()
	sketch := func(id Identity) string {
		h := sha256.New()
		for _, v := range id.Sketch {
			binary.Write(h, binary.LittleEndian, v)
		}
		return hex.EncodeToString(h.Sum(nil))
	}
	for name, c := range map[string]struct {
		path         string
		opt          LoadOptions
		hash, sketch string
	}{
		"idx":    {writeTemp(t, dir, "img-idx3-ubyte.gz", gz(idxFile(0x08, []int{n, 3, 9}, pix))), LoadOptions{Scale: 1.0 / 255}, bytesHash, bytesSketch},
		"npy u1": {writeTemp(t, dir, "u1.npy", npyFile(1, "|u1", false, []int{n, p}, pix)), LoadOptions{}, bytesHash, bytesSketch},
		"npy f8": {writeTemp(t, dir, "f8.npy", npyFile(1, "<f8", false, []int{n, p}, encode(binary.LittleEndian, vals))), LoadOptions{},
			"476f182262c323af25ae84146f4d2fbb9f4c8e410f4543df6facce19d9c1dc3c", "8b87f8ef0aee3866beed765312c99d797a0eb77ddda8d883bc55f3a03aa9c2bb"},
	} {
		t.Run(name, func(t *testing.T) {
			id := sourceOf(t, c.path, c.opt)
			assert.Equal(t, c.hash, id.Hash)
			assert.Equal(t, c.sketch, sketch(id))
			assert.Equal(t, int64(n), id.Rows)
		})
	}
}
