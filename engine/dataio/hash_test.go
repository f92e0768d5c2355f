package dataio

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
)

// TestContentHashEncoding: the hash of a small CSV read through a view is
// the SHA-256 of the stream docs/data.md documents, built here by hand.
func TestContentHashEncoding(t *testing.T) {
	dir := t.TempDir()
	path := writeTemp(t, dir, "a.csv", []byte("1,2,3,1\n4,-0,6,0\n"))
	ds, err := Load(path, LoadOptions{Scale: 2, FeatureColumns: []string{"2", "1"}, LabelColumn: "3"})
	require.NoError(t, err)
	le := binary.LittleEndian
	u := func(b []byte, v ...uint64) []byte {
		for _, x := range v {
			b = le.AppendUint64(b, x)
		}
		return b
	}
	f := math.Float64bits
	want := append([]byte("dplr-dataset-v2\nrows\n"), u(nil, 2, 2, 0, 0, f(2), 0, 2, 2, 1)...)
	for _, row := range [][]float64{{1, 2, 3, 1}, {4, 0, 6, 0}} { // -0 as +0
		var enc []byte
		for _, v := range row {
			enc = u(enc, f(v))
		}
		d := sha256.Sum256(enc)
		want = append(want, d[:]...)
	}
	want = u(want, 0, 0, 1, 1, 0) // no Y, no users, labels 1 and 0
	sum := sha256.Sum256(want)
	assert.Equal(t, hex.EncodeToString(sum[:]), ds.Hash)
	assert.Equal(t, []float64{6, 4, 12, 0}, ds.X.RawMatrix().Data)
}

// TestContentHashView: each view choice that changes the values a plugin
// receives changes the hash; choices that resolve to the same view do not;
// the source identity stays the same throughout.
func TestContentHashView(t *testing.T) {
	dir := t.TempDir()
	path := writeTemp(t, dir, "a.csv", []byte("1,2,3\n4,5,6\n7,8,9\n"))
	base, baseID, err := LoadIdentity(path, LoadOptions{})
	require.NoError(t, err)
	cases := []struct {
		name string
		opt  LoadOptions
		same bool
	}{
		{"scale 1 is no scale", LoadOptions{Scale: 1}, true},
		{"every column named in order", LoadOptions{FeatureColumns: []string{"0", "1", "2"}}, true},
		{"column scales of 1", LoadOptions{ColumnScales: []float64{1, 1, 1}}, false}, // another view, one value
		{"scale", LoadOptions{Scale: 2}, false},
		{"column scales", LoadOptions{ColumnScales: []float64{1, 2, 4}}, false},
		{"fewer columns", LoadOptions{FeatureColumns: []string{"0", "1"}}, false},
		{"columns reordered", LoadOptions{FeatureColumns: []string{"1", "0", "2"}}, false},
		{"label column", LoadOptions{LabelColumn: "2"}, false},
		{"header", LoadOptions{Header: HeaderYes}, false},
		{"trace", LoadOptions{Kind: data.Trace, D1: 1, D2: 2}, false},
		{"trace, other shape", LoadOptions{Kind: data.Trace, D1: 2, D2: 1}, false},
	}
	seen := map[string]string{base.Hash: "base"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ds, id, err := LoadIdentity(path, c.opt)
			require.NoError(t, err)
			assert.Equal(t, baseID, id, "the view is not part of the source")
			if c.same {
				assert.Equal(t, base.Hash, ds.Hash)
				return
			}
			assert.NotContains(t, seen, ds.Hash, "a view already seen")
			seen[ds.Hash] = c.name
		})
	}
}

// TestContentHashRows: the hash follows the rows in order (a permutation
// changes it, the identity does not); -0 and +0 are one value; the same
// values from another format, or a float32 copy, hash the same.
func TestContentHashRows(t *testing.T) {
	dir := t.TempDir()
	le := binary.LittleEndian
	x := []float64{1, 0, 2, 3, 4, 5}
	load := func(name string, content []byte, opt LoadOptions) (*data.Dataset, Identity) {
		ds, id, err := LoadIdentity(writeTemp(t, dir, name, content), opt)
		require.NoError(t, err)
		return ds, id
	}
	for _, opt := range []LoadOptions{{}, {Scale: 1.0 / 3}} {
		a, aID := load("a.npy", npyFile(1, "<f8", false, []int{3, 2}, encode(le, x)), opt)
		neg, negID := load("n.npy", npyFile(1, "<f8", false, []int{3, 2}, encode(le, []float64{1, math.Copysign(0, -1), 2, 3, 4, 5})), opt)
		f4, _ := load("a.npy.gz", gz(npyFile(1, "<f4", false, []int{3, 2}, encode(le, f32s(x)))), opt)
		csv, _ := load("a.csv", []byte("1,0\n2,3\n4,5\n"), opt)
		idx, _ := load("a.idx", idxFile(0x08, []int{3, 2}, []byte{1, 0, 2, 3, 4, 5}), opt)
		perm, permID := load("p.npy", npyFile(1, "<f8", false, []int{3, 2}, encode(le, []float64{2, 3, 1, 0, 4, 5})), opt)
		for _, other := range []*data.Dataset{neg, f4, csv, idx} {
			assert.Equal(t, a.Hash, other.Hash)
		}
		assert.Equal(t, aID, negID)
		assert.NotEqual(t, a.Hash, perm.Hash, "row order is content")
		assert.Equal(t, aID, permID, "but not source identity")
	}
}

// TestContentHashUsers: users data hashes its rows in the order the plugin
// receives them (grouped by user): records already grouped, or grouped
// while loading (CSV, or arrays through the whole-file reader rather than
// the streamed one), hash alike; another order within a user does not.
func TestContentHashUsers(t *testing.T) {
	dir := t.TempDir()
	le := binary.LittleEndian
	hash := func(name string, content []byte, opt LoadOptions) string {
		ds, err := Load(writeTemp(t, dir, name, content), opt)
		require.NoError(t, err)
		return ds.Hash
	}
	opt := LoadOptions{Kind: data.Users}
	loose := hash("a.csv", []byte("user,a,y\n2,1,0.1\n1,2,0.2\n2,3,0.3\n"), opt)
	assert.Equal(t, loose, hash("b.csv", []byte("user,a,y\n1,2,0.2\n2,1,0.1\n2,3,0.3\n"), opt))
	assert.NotEqual(t, loose, hash("c.csv", []byte("user,a,y\n1,2,0.2\n2,3,0.3\n2,1,0.1\n"), opt))

	arrays := func(name string, x, y []float64, ids []int64) string {
		return hash(name+".x.npy", npyFile(1, "<f8", false, []int{len(y), 1}, encode(le, x)), LoadOptions{Kind: data.Users,
			ResponsePath: writeTemp(t, dir, name+".y.npy", npyFile(1, "<f8", false, []int{len(y)}, encode(le, y))),
			UsersPath:    writeTemp(t, dir, name+".u.npy", npyFile(1, "<i8", false, []int{len(y)}, encode(le, ids)))})
	}
	regrouped := arrays("loose", []float64{1, 2, 3}, []float64{0.1, 0.2, 0.3}, []int64{2, 1, 2})
	streamed := arrays("grouped", []float64{2, 1, 3}, []float64{0.2, 0.1, 0.3}, []int64{1, 2, 2})
	assert.Equal(t, streamed, regrouped)
}
