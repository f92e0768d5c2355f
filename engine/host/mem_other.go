//go:build !linux

package host

// PhysicalMemory returns the machine's physical memory in bytes (0 when
// unknown, as on this platform).
func PhysicalMemory() int64 { return 0 }
