package dataio

import (
	"math/bits"

	"github.com/dplr/dplr/engine/data"
)

// IdentityParts is a source identity under construction that can be split
// across workers and merged: each part hashes some of the rows (AddRecord) and
// parts are combined in any order and grouping (Merge) into the Identity
// that one pass over all the rows would give. It serves distributed
// pipelines (the beam module), which must charge a sharded data set to the
// same budget as the one file holding its rows. Only plain numeric rows
// without side columns (rows data) are covered. The fields are exported
// for serialisation only; build parts with AddRecord and Merge.
type IdentityParts struct {
	// Rows is the number of rows hashed.
	Rows int64
	// Sum is the sum of the rows' digests mod 2^256, little-endian limbs.
	Sum [4]uint64
	// Heap holds the part's bottom-k sketch hashes, in increasing order.
	Heap []uint64
}

// Merge adds the rows hashed by q.
func (p *IdentityParts) Merge(q IdentityParts) {
	var c uint64
	for k := range p.Sum {
		p.Sum[k], c = bits.Add64(p.Sum[k], q.Sum[k], c)
	}
	p.Rows += q.Rows
	sk := sketcher{vals: p.Heap}
	for _, h := range q.Heap {
		sk.add(h)
	}
	p.Heap = sk.vals
}

// Identity returns the identity of the rows hashed so far.
func (p IdentityParts) Identity() Identity {
	b := idBuilder{rows: p.Rows, sum: p.Sum, sk: sketcher{vals: p.Heap}}
	return b.finish()
}

// AddRecord hashes one source row of an array source with side values:
// the main values x (unscaled), then the float side values (a response),
// then the integer ones (a user id, a label), the order in which
// LoadIdentity hashes a trace or users data set read from arrays (IdentityOf
// too); with no side values it hashes a rows data set's row.
func (p *IdentityParts) AddRecord(x []float64, floats []float64, ints []int64) {
	var sides []sideCol
	for _, v := range floats {
		sides = append(sides, sideCol{f: []float64{v}})
	}
	for _, v := range ints {
		sides = append(sides, sideCol{i: []int64{v}})
	}
	b := idBuilder{rows: p.Rows, sum: p.Sum, sk: sketcher{vals: p.Heap}, sides: sides}
	b.row(0, x, nil)
	p.Rows, p.Sum, p.Heap = b.rows, b.sum, b.sk.vals
}

// parts returns the builder's state as parts.
func (b *idBuilder) parts() IdentityParts {
	return IdentityParts{Rows: b.rows, Sum: b.sum, Heap: b.sk.vals}
}

// LoadIdentityParts is LoadIdentity returning the identity's parts, so
// that the identities of several files (the shards of one data set) can be
// merged into the identity of the one file holding all their records:
// merging the parts of files a and b gives the identity LoadIdentity
// computes for the concatenation of their records (for CSV, without
// repeating the header).
func LoadIdentityParts(path string, opt LoadOptions) (*data.Dataset, IdentityParts, error) {
	ids := &idSink{want: true}
	ds, err := loadWith(path, opt, ids)
	if err != nil {
		return nil, IdentityParts{}, err
	}
	return ds, ids.b.parts(), nil
}
