//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package dataio

import (
	"fmt"
	"io"
	"os"
)

// mmapSupported reports whether mapFile maps files (rather than reading
// them into memory).
const mmapSupported = false

// mapFile reads size bytes of f into memory on systems without mmap.
func mapFile(f *os.File, size int64) ([]byte, func() error, error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, nil, fmt.Errorf("cannot read %d bytes", size)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, size), b); err != nil {
		return nil, nil, fmt.Errorf("read: %w", err)
	}
	return b, func() error { return nil }, nil
}
