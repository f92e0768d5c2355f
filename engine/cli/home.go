package cli

import (
	"os"
	"path/filepath"
)

// resolveHome returns $DPLR_HOME, else $XDG_DATA_HOME/dplr, else
// ~/.local/share/dplr.
func resolveHome(getenv func(string) string) string {
	if h := getenv("DPLR_HOME"); h != "" {
		return h
	}
	if x := getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "dplr")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "dplr")
	}
	return ".dplr"
}
