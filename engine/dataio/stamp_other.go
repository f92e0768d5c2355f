//go:build !linux

package dataio

import (
	"os"
	"sync"
)

// fileStamp is empty where the change time is not read: only sizes and
// modification times are checked there.
func fileStamp(os.FileInfo) string { return "" }

// changeTime is 0 where the change time is not read.
func changeTime(os.FileInfo) int64 { return 0 }

// lockDir is a process-local lock where flock is not used.
func lockDir(dir string) (func(), error) {
	dirLocks.Lock()
	return dirLocks.Unlock, nil
}

var dirLocks sync.Mutex
