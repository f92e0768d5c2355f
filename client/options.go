package client

import (
	"cmp"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/dplr/dplr/engine/host"
)

// NoMemoryLimit as Options.MaxMemory turns the pre-flight memory check off.
const NoMemoryLimit = -1

// Options configures a Client. The zero value is usable: the default dplr
// home, the default plugin search path, the default limits. New validates
// it once.
type Options struct {
	// Home is the dplr home: the budget ledger, the data cache and the
	// user plugin directory (default $DPLR_HOME, else the user data
	// directory, as the dplr command). It must be a directory if it exists.
	Home string
	// PluginDirs are searched for dplr-* plugins before the default search
	// path ($DPLR_PLUGIN_PATH, bin/plugins beside the executable,
	// Home/plugins).
	PluginDirs []string
	// Manifest, when set, pins plugin binaries (sha256sum format): an
	// unlisted or altered plugin is refused.
	Manifest string
	// PluginTimeout bounds a plugin's start, its catalogue, its pre-flight
	// check and its shutdown (default 10 s).
	PluginTimeout time.Duration
	// MaxOutputBytes bounds the total size of a fit's output matrices
	// (default a quarter of physical memory).
	MaxOutputBytes int64
	// MaxMemory refuses, before reserving, a fit whose estimated peak
	// memory exceeds it (default three quarters of physical memory;
	// NoMemoryLimit: no limit).
	MaxMemory int64
	// PluginLog receives the plugins' own log output (nil discards it).
	PluginLog io.Writer
	// NoSandbox starts plugins without Landlock confinement.
	NoSandbox bool
}

// validate checks the options and fills the defaults.
func (o *Options) validate() error {
	if o.Home == "" {
		h, err := HomeDir()
		if err != nil {
			h = ".dplr"
		}
		o.Home = h
	}
	st, err := os.Stat(o.Home)
	switch {
	case err == nil && !st.IsDir():
		return classedf(ErrUsage, "the dplr home %s is not a directory; nothing was run or spent", o.Home)
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return classedf(ErrUsage, "the dplr home %s cannot be used: %v; nothing was run or spent", o.Home, err)
	}
	switch {
	case o.PluginTimeout < 0:
		return classedf(ErrUsage, "plugin timeout %s is negative", o.PluginTimeout)
	case o.MaxOutputBytes < 0:
		return classedf(ErrUsage, "the output bound must be a positive number of bytes")
	case o.MaxMemory < NoMemoryLimit:
		return classedf(ErrUsage, "memory limit %d is negative (NoMemoryLimit turns the check off)", o.MaxMemory)
	}
	o.PluginTimeout = cmp.Or(o.PluginTimeout, 10*time.Second)
	o.MaxMemory = cmp.Or(o.MaxMemory, DefaultMaxMemory())
	return nil
}

// hostOptions are the options plugins are started with.
func (o *Options) hostOptions() (host.Options, error) {
	opt := host.Options{StartTimeout: o.PluginTimeout, CallTimeout: o.PluginTimeout, MaxOutputBytes: o.MaxOutputBytes,
		Stderr: o.PluginLog, NoSandbox: o.NoSandbox, CatalogueDir: filepath.Join(o.Home, "catalogues")}
	if o.Manifest != "" {
		m, err := host.ReadManifest(o.Manifest)
		if err != nil {
			return opt, classed(ErrUsage, err)
		}
		opt.Manifest = m
	}
	return opt, nil
}

// memoryLimit is the host.Runner's MaxMemory (0: none).
func (o *Options) memoryLimit() int64 {
	if o.MaxMemory < 0 {
		return 0
	}
	return o.MaxMemory
}

// pluginDirs is the plugin search path, first match first.
func (o *Options) pluginDirs() []string {
	return append(append([]string(nil), o.PluginDirs...), host.DefaultDirs(o.Home)...)
}
