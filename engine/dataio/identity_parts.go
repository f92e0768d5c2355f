package dataio

import "math/bits"

// IdentityParts is a source identity under construction that can be split
// across workers and merged: each part hashes some of the rows (AddRow) and
// parts are combined in any order and grouping (Merge) into the Identity
// that one pass over all the rows would give. It serves distributed
// pipelines (the beam module), which must charge a sharded data set to the
// same budget as the one file holding its rows. Only plain numeric rows
// without side columns (rows data) are covered. The fields are exported
// for serialisation only; build parts with AddRow and Merge.
type IdentityParts struct {
	// Rows is the number of rows hashed.
	Rows int64
	// Sum is the sum of the rows' digests mod 2^256, little-endian limbs.
	Sum [4]uint64
	// Heap holds the part's bottom-k sketch hashes, in heap order.
	Heap []uint64
}

// AddRow hashes one source row (unscaled values, as the file holds them).
func (p *IdentityParts) AddRow(x []float64) {
	b := idBuilder{rows: p.Rows, sum: p.Sum, sk: sketcher{heap: p.Heap}}
	b.row(-1, x, nil)
	p.Rows, p.Sum, p.Heap = b.rows, b.sum, b.sk.heap
}

// Merge adds the rows hashed by q.
func (p *IdentityParts) Merge(q IdentityParts) {
	var c uint64
	for k := range p.Sum {
		p.Sum[k], c = bits.Add64(p.Sum[k], q.Sum[k], c)
	}
	p.Rows += q.Rows
	sk := sketcher{heap: p.Heap}
	for _, h := range q.Heap {
		sk.add(h)
	}
	p.Heap = sk.heap
}

// Identity returns the identity of the rows hashed so far.
func (p IdentityParts) Identity() Identity {
	b := idBuilder{rows: p.Rows, sum: p.Sum, sk: sketcher{heap: p.Heap}}
	return b.finish()
}
