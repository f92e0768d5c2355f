//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package dataio

import (
	"fmt"
	"os"
	"syscall"
)

// mmapSupported reports whether mapFile maps files (rather than reading
// them into memory).
const mmapSupported = true

// mapFile maps size bytes of f read-only and returns the mapping and a
// function releasing it.
func mapFile(f *os.File, size int64) ([]byte, func() error, error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, nil, fmt.Errorf("cannot map %d bytes", size)
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap: %w", err)
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}
