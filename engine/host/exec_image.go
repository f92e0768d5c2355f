package host

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// execImage is the file a plugin is executed from: the plugin's own path,
// or, when a manifest pins it, a private copy of exactly the bytes whose
// checksum was verified. A copy lives in the host's run directory (mode
// 0700).
type execImage struct {
	path string
	dir  string // private directory to remove, "" when path is the plugin's own
}

// prepareExec returns the file to execute for the plugin at path. With a
// manifest, the plugin is read once, hashed while copied into the host's
// 0700 run directory, and the copy is executed only if the digest matches,
// so replacing the file after the check cannot run an unlisted binary.
func prepareExec(path string, m Manifest) (*execImage, error) {
	if m == nil {
		return &execImage{path: path}, nil
	}
	want, ok := m[filepath.Base(path)]
	if !ok {
		return nil, fmt.Errorf("plugin %s is not listed in the checksum manifest", path)
	}
	src, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading plugin for its checksum: %w", err)
	}
	defer src.Close()
	base, err := acquireRunDir()
	if err != nil {
		return nil, fmt.Errorf("private copy of the plugin: %w", err)
	}
	dir, err := os.MkdirTemp(base, "exec-")
	if err != nil {
		releaseRunDir()
		return nil, fmt.Errorf("private copy of the plugin: %w", err)
	}
	img := &execImage{path: filepath.Join(dir, filepath.Base(path)), dir: dir}
	dst, err := os.OpenFile(img.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o700)
	if err != nil {
		img.remove()
		return nil, fmt.Errorf("private copy of the plugin: %w", err)
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(dst, h), src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		img.remove()
		return nil, fmt.Errorf("private copy of the plugin: %w", err)
	}
	if got := h.Sum(nil); !bytes.Equal(got, want) {
		img.remove()
		return nil, fmt.Errorf("checksum mismatch: %s has SHA-256 %s, the manifest lists %s", path, hex.EncodeToString(got), hex.EncodeToString(want))
	}
	if err := os.Chmod(img.path, 0o500); err != nil {
		img.remove()
		return nil, fmt.Errorf("private copy of the plugin: %w", err)
	}
	return img, nil
}

// remove deletes a private copy (nothing for the plugin's own path).
func (img *execImage) remove() {
	if img != nil && img.dir != "" {
		os.RemoveAll(img.dir)
		img.dir = ""
		releaseRunDir()
	}
}
