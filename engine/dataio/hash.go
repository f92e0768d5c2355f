package dataio

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"math"

	"github.com/dplr/dplr/engine/data"
)

// hashPrefix versions the canonical encoding documented in docs/data.md.
const hashPrefix = "dplr-dataset-v2\n"

// hashView is the part of a view the content hash encodes besides the
// kind and shape: what turns the fields of a source row into a row of X.
type hashView struct {
	scale     float64   // the scale (1 when none)
	colScales []float64 // the column scales (none: nil)
	feats     []int     // the source fields forming X, in order (nil: the first p)
}

// Hash returns the content hash of ds taken as its own source: each row
// of X with its response, user id and label (the rows IdentityOf hashes),
// read unscaled. It does not validate ds.
func Hash(ds *data.Dataset) string {
	ds = ds.WithDenseX()
	return contentHash(ds, hashView{scale: 1}, ownBuilder(ds, true).digs)
}

// contentHash returns the content hash of ds read from source rows whose
// digests, in the order of ds's rows, are digs (32 bytes each), through
// view v.
func contentHash(ds *data.Dataset, v hashView, digs []byte) string {
	n, p := 0, 0
	if ds.X != nil && !ds.X.IsEmpty() {
		n, p = ds.X.Dims()
	}
	h := newContentHash(ds, n, p, v)
	h.Write(digs)
	return finishContentHash(h, ds)
}

// newContentHash starts a content hash: the prefix, kind, shape and view
// written, the row digests and the tail (finishContentHash) to follow.
func newContentHash(ds *data.Dataset, n, p int, v hashView) hash.Hash {
	h := sha256.New()
	io.WriteString(h, hashPrefix+string(ds.Kind)+"\n")
	d1, d2 := 0, 0
	if ds.Kind == data.Trace {
		d1, d2 = ds.D1, ds.D2
	}
	var b []byte
	put := func(v uint64) { b = binary.LittleEndian.AppendUint64(b, v) }
	for _, u := range []int{n, p, d1, d2} {
		put(uint64(u))
	}
	put(math.Float64bits(v.scale))
	put(uint64(len(v.colScales)))
	for _, s := range v.colScales {
		put(math.Float64bits(s))
	}
	put(uint64(p))
	for j := range p {
		if v.feats != nil {
			j = v.feats[j]
		}
		put(uint64(j))
	}
	h.Write(b)
	return h
}

// finishContentHash writes the tail (Y, users, labels) and returns the
// hash.
func finishContentHash(h hash.Hash, ds *data.Dataset) string {
	putU := func(v uint64) { h.Write(binary.LittleEndian.AppendUint64(nil, v)) }
	putU(b2u(ds.Y != nil))
	_ = writeLE(h, ds.Y) // a hash's Write never fails
	u := ds.NumUsers()
	putU(uint64(u))
	if u > 0 {
		writeLE(h, intsToInt64(ds.UserStart))
		ids := ds.UserIDs
		if len(ids) != u {
			// Malformed; hash what is there so that Hash never panics.
			ids = append(append([]int64(nil), ids...), make([]int64, max(u-len(ids), 0))...)[:u]
		}
		writeLE(h, ids)
	}
	putU(b2u(ds.Labels != nil))
	writeLE(h, intsToInt64(ds.Labels))
	return hex.EncodeToString(h.Sum(nil))
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func intsToInt64(v []int) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

// checkFinite reports the first non-finite value of x (offset gives the
// element index of x[0] in the row-major n×p matrix).
func checkFinite(x []float64, offset, p int) error {
	if i := firstNonFinite(x); i >= 0 {
		k := offset + i
		return fmt.Errorf("row %d, column %d: value %v is not finite", k/p, k%p, x[i])
	}
	return nil
}

// checkStructure checks the kind-specific structure of ds
// (data.Dataset.CheckShape, and one id per user) and the finiteness of the
// responses; the readers check X while converting it.
func checkStructure(ds *data.Dataset) error {
	if err := ds.CheckShape(); err != nil {
		return err
	}
	if ds.Kind == data.Users && len(ds.UserIDs) != len(ds.UserStart)-1 {
		return fmt.Errorf("user data: %d users but %d user ids", len(ds.UserStart)-1, len(ds.UserIDs))
	}
	for i, v := range ds.Y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("response %d: value %v is not finite", i, v)
		}
	}
	return nil
}
