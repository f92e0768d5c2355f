//go:build unix

package sdk

import "syscall"

// MaxRSSKiB returns this process's peak resident set size in KiB (0 if the
// system does not say).
func MaxRSSKiB() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return int64(ru.Maxrss) // KiB on Linux
}
