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

// hashPrefix versions the canonical encoding documented in the package
// comment.
const hashPrefix = "dplr-dataset-v1\n"

// Hash returns the content hash of ds (see the package documentation for
// the canonical encoding). It does not validate ds.
func Hash(ds *data.Dataset) string {
	n, p := 0, 0
	if ds.X != nil && !ds.X.IsEmpty() {
		n, p = ds.X.Dims()
	}
	d1, d2 := 0, 0
	if ds.Kind == data.Trace {
		d1, d2 = ds.D1, ds.D2
	}
	h := newContentHash(ds.Kind, n, p, d1, d2)
	if n > 0 {
		raw := ds.X.RawMatrix()
		if raw.Stride == p {
			hashF64(h, raw.Data[:n*p])
		} else {
			for i := 0; i < n; i++ {
				hashF64(h, raw.Data[i*raw.Stride:i*raw.Stride+p])
			}
		}
	}
	writeHashTail(h, ds)
	return hex.EncodeToString(h.Sum(nil))
}

// writeHashHeader writes the prefix, kind and shape.
func writeHashHeader(h io.Writer, kind data.Kind, n, p, d1, d2 int) {
	io.WriteString(h, hashPrefix)
	io.WriteString(h, string(kind))
	io.WriteString(h, "\n")
	var b [32]byte
	binary.LittleEndian.PutUint64(b[0:], uint64(n))
	binary.LittleEndian.PutUint64(b[8:], uint64(p))
	binary.LittleEndian.PutUint64(b[16:], uint64(d1))
	binary.LittleEndian.PutUint64(b[24:], uint64(d2))
	h.Write(b[:])
}

// writeHashTail writes everything after X: Y, users, labels.
func writeHashTail(h io.Writer, ds *data.Dataset) {
	var b [8]byte
	putU := func(v uint64) {
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	if ds.Y != nil {
		putU(1)
		hashF64(h, ds.Y)
	} else {
		putU(0)
	}
	u := ds.NumUsers()
	putU(uint64(u))
	if u > 0 {
		writeI64LE(h, intsToInt64(ds.UserStart))
		ids := ds.UserIDs
		if len(ids) != u {
			// Malformed; hash what is there so that Hash never panics.
			ids = append(append([]int64(nil), ids...), make([]int64, max(u-len(ids), 0))...)[:u]
		}
		writeI64LE(h, ids)
	}
	if ds.Labels != nil {
		putU(1)
		writeI64LE(h, intsToInt64(ds.Labels))
	} else {
		putU(0)
	}
}

func intsToInt64(v []int) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

// hashF64 feeds little-endian float64 bytes of v to h.
func hashF64(h io.Writer, v []float64) {
	_ = writeF64LE(h, v) // a hash's Write never fails
}

// newContentHash starts a content hash: the prefix, kind and shape
// written, X and the tail (writeHashTail) to follow.
func newContentHash(kind data.Kind, n, p, d1, d2 int) hash.Hash {
	h := sha256.New()
	writeHashHeader(h, kind, n, p, d1, d2)
	return h
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
