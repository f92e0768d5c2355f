package dataio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// idxType maps the IDX type byte to a dtype. IDX data is big-endian.
func idxType(b byte) (dtype, bool) {
	switch b {
	case 0x08:
		return dtype{kind: 'u', size: 1}, true
	case 0x09:
		return dtype{kind: 'i', size: 1}, true
	case 0x0B:
		return dtype{kind: 'i', size: 2, big: true}, true
	case 0x0C:
		return dtype{kind: 'i', size: 4, big: true}, true
	case 0x0D:
		return dtype{kind: 'f', size: 4, big: true}, true
	case 0x0E:
		return dtype{kind: 'f', size: 8, big: true}, true
	}
	return dtype{}, false
}

// isIDXMagic reports whether b starts like an IDX file: two zero bytes, a
// known type byte and a rank from 1 to 32.
func isIDXMagic(b []byte) bool {
	if len(b) < 4 || b[0] != 0 || b[1] != 0 {
		return false
	}
	_, ok := idxType(b[2])
	return ok && b[3] >= 1 && b[3] <= 32
}

// decodeIDXHeader reads an IDX header and returns the pending payload.
func decodeIDXHeader(r io.Reader, known, bound int64) (*pending, error) {
	var magic [4]byte
	if _, err := io.ReadFull(r, magic[:]); err != nil {
		return nil, fmt.Errorf("idx: truncated magic: %w", err)
	}
	if magic[0] != 0 || magic[1] != 0 {
		return nil, errors.New("idx: bad magic (not an IDX file)")
	}
	dt, ok := idxType(magic[2])
	if !ok {
		return nil, fmt.Errorf("idx: unknown element type 0x%02x", magic[2])
	}
	rank := int(magic[3])
	if rank < 1 || rank > 32 {
		return nil, fmt.Errorf("idx: unsupported rank %d", rank)
	}
	dims := make([]byte, 4*rank)
	if _, err := io.ReadFull(r, dims); err != nil {
		return nil, fmt.Errorf("idx: truncated dimensions (rank %d): %w", rank, err)
	}
	shape := make([]int, rank)
	for i := range shape {
		shape[i] = int(binary.BigEndian.Uint32(dims[4*i:]))
	}
	count, err := shapeCount(shape, dt.size)
	if err != nil {
		return nil, fmt.Errorf("idx: %w", err)
	}
	if known >= 0 {
		known -= int64(4 + 4*rank)
	}
	if bound >= 0 {
		bound = max(bound-int64(4+4*rank), 0)
	}
	return &pending{what: "idx", offset: int64(4 + 4*rank), shape: shape, dt: dt, r: r, nbytes: count * int64(dt.size), known: known, bound: bound}, nil
}
