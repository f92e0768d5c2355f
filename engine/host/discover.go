package host

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// PluginPrefix is the executable-name prefix of dplr plugins.
const PluginPrefix = "dplr-"

// DefaultDirs returns the plugin search path, highest precedence first:
// the directories in $DPLR_PLUGIN_PATH, then bin/plugins-openblas and
// bin/plugins beside the host executable (the OpenBLAS build, when made, is
// used without a flag), then the user directory <home>/plugins.
func DefaultDirs(home string) []string {
	var dirs []string
	if env := os.Getenv("DPLR_PLUGIN_PATH"); env != "" {
		for _, d := range filepath.SplitList(env) {
			if d != "" {
				dirs = append(dirs, d)
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		dirs = append(dirs, filepath.Join(filepath.Dir(exe), openBLASDir), filepath.Join(filepath.Dir(exe), pureGoDir))
	}
	if home != "" {
		dirs = append(dirs, filepath.Join(home, "plugins"))
	}
	return dirs
}

// The directories of the two builds beside the host (make build and make
// build BACKEND=openblas).
const (
	openBLASDir = "plugins-openblas"
	pureGoDir   = "plugins"
)

// backendTwin reports whether hidden is the pure-Go build of the OpenBLAS
// plugin by, in the two build directories of one host: the preference
// DefaultDirs documents, not a plugin installed where it is never used.
func backendTwin(hidden, by string) bool {
	bd := filepath.Dir(by)
	return filepath.Base(bd) == openBLASDir && filepath.Dir(hidden) == filepath.Join(filepath.Dir(bd), pureGoDir)
}

// Shadowed is a plugin executable hidden by one of the same name found
// earlier in the search path.
type Shadowed struct {
	Path string // the hidden executable
	By   string // the executable used instead
}

// DiscoverAll lists plugin executables (files named dplr-* with an
// execute bit) in dirs; when two directories hold a plugin of the same
// name, the earlier one wins, and the executables it hides are reported
// so that a user who installs a plugin where it is never used can be told
// why (all but the pure-Go twin of an OpenBLAS build beside the host,
// which is hidden by design). Missing directories are skipped.
func DiscoverAll(dirs []string) (found []string, shadowed []Shadowed) {
	seen := map[string]string{}
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			names = append(names, e.Name())
		}
		sort.Strings(names)
		for _, n := range names {
			if !strings.HasPrefix(n, PluginPrefix) {
				continue
			}
			p := filepath.Join(d, n)
			st, err := os.Stat(p)
			if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
				continue
			}
			if by, ok := seen[n]; ok {
				if !samePath(by, p) && !backendTwin(p, by) {
					shadowed = append(shadowed, Shadowed{Path: p, By: by})
				}
				continue
			}
			seen[n] = p
			found = append(found, p)
		}
	}
	return found, shadowed
}

// samePath reports whether a and b name the same file (a directory listed
// twice in the search path is not shadowing itself).
func samePath(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// Manifest pins plugin binaries to SHA-256 checksums. Its file format is
// the one sha256sum prints: "<hex digest>  <file name>" per line; names
// are matched on the executable's base name.
type Manifest map[string][]byte

// ReadManifest parses a checksum manifest.
func ReadManifest(path string) (Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading plugin manifest: %w", err)
	}
	defer f.Close()
	m := Manifest{}
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		fields := strings.Fields(t)
		if len(fields) != 2 {
			return nil, fmt.Errorf("plugin manifest %s line %d: want \"<sha256> <name>\"", path, line)
		}
		sum, err := hex.DecodeString(fields[0])
		if err != nil || len(sum) != sha256.Size {
			return nil, fmt.Errorf("plugin manifest %s line %d: %q is not a SHA-256 digest", path, line, fields[0])
		}
		m[filepath.Base(strings.TrimPrefix(fields[1], "*"))] = sum
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading plugin manifest %s: %w", path, err)
	}
	return m, nil
}
