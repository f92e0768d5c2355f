//go:build linux

package dataio

import (
	"fmt"
	"os"
	"syscall"
)

// fileStamp identifies one state of a file without reading it: its device,
// inode, size and change time. Any write to the file, a replacement by
// another file (rename, copy) or a truncation changes the stamp, and the
// change time cannot be set back by a user (touch sets the modification
// time, and that updates the change time), so a cached array edited after
// it was prepared is caught for the cost of a stat.
func fileStamp(st os.FileInfo) string {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d:%d:%d:%d.%09d", s.Dev, s.Ino, s.Size, s.Ctim.Sec, s.Ctim.Nsec)
}

// changeTime is the file's change time (Unix nanoseconds), 0 where it is
// not read.
func changeTime(st os.FileInfo) int64 {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	return s.Ctim.Sec*1e9 + s.Ctim.Nsec
}

// lockDir takes an exclusive advisory lock on dir (its .lock file), held
// across processes until the returned function is called.
func lockDir(dir string) (func(), error) {
	f, err := os.OpenFile(dir+"/.lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
