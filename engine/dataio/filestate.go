package dataio

import (
	"errors"
	"os"
	"time"
)

// FileState is one state of a file, read with a stat and not from its
// content: what a reader records beside a hash of the file so that a
// later read can be tied to that hash instead of taking it again, as the
// data cache ties a prepared array to its source (FileRef.Stamp). Two
// states are equal (==) when the file was neither written, truncated,
// touched nor replaced in between.
type FileState struct {
	// Path is the file as it was named.
	Path string `json:"path"`
	// Size is its size in bytes, ModTime its modification time (Unix
	// nanoseconds).
	Size    int64 `json:"size"`
	ModTime int64 `json:"mtime"`
	// Stamp is fileStamp's: device, inode, size and change time on Linux;
	// empty elsewhere and for a file that is not regular, whose state is
	// then not trusted (Trusted).
	Stamp string `json:"stamp,omitempty"`
	// Changed is the change time (Unix nanoseconds; 0 where not read):
	// SettleWait's input.
	Changed int64 `json:"ctime,omitempty"`
}

// ErrFileChanged is wrapped when a file is not in the state recorded for
// it (FileState).
var ErrFileChanged = errors.New("the file changed or was replaced since its state was recorded")

// StateOf returns the state of the file at path that st (its stat, or
// the stat of a descriptor open on it) describes.
func StateOf(path string, st os.FileInfo) FileState {
	s := FileState{Path: path, Size: st.Size(), ModTime: st.ModTime().UnixNano()}
	if st.Mode().IsRegular() {
		s.Stamp, s.Changed = fileStamp(st), changeTime(st)
	}
	if s.Stamp == "" {
		s.Changed = 0
	}
	return s
}

// Trusted reports whether s names one content of its file: a regular
// file whose stamp (with its change time, which a user cannot set back)
// changes with any write, truncation, touch or replacement.
func (s FileState) Trusted() bool { return s.Stamp != "" }

// SettleWait returns how long after now a read of the file must start for
// its content to be the one s names: until the change time is more than
// one tick of the file system's clock old. A write within the tick in
// which the state was read may leave the change time as it was (Linux
// stamps files with a coarse clock, 1–10 ms; some file systems keep
// whole seconds, assumed when the change time has no fraction). Zero when
// the change time is old enough or s is not trusted.
func (s FileState) SettleWait(now time.Time) time.Duration {
	if !s.Trusted() {
		return 0
	}
	tick := 100 * time.Millisecond
	if s.Changed%int64(time.Second) == 0 {
		tick = 2 * time.Second
	}
	return max(0, time.Duration(s.Changed-now.UnixNano())+tick)
}
