//go:build !unix

package sdk

// MaxRSSKiB returns 0: peak memory is not available on this system.
func MaxRSSKiB() int64 { return 0 }
