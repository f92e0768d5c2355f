package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/dplr/dplr/engine/host"
	"github.com/dplr/dplr/engine/ledger"
	"github.com/dplr/dplr/engine/sdk"
)

// pluginFlags are the flags every plugin-using command shares.
type pluginFlags struct {
	dirs     multiFlag
	manifest string
	home     string
	timeout  time.Duration
	verbose  bool
	// maxOutput bounds a fit's output matrices together, in bytes (0:
	// host.DefaultMaxOutputBytes).
	maxOutput int64
}

func (pf *pluginFlags) register(fs *flag.FlagSet) {
	fs.Var(&pf.dirs, "plugin-dir", "`DIR` to search for dplr-* plugins first (repeatable)")
	fs.StringVar(&pf.manifest, "manifest", "", "sha256sum-style manifest pinning plugin binaries; unlisted or altered plugins are refused")
	fs.StringVar(&pf.home, "home", "", "dplr home directory (default $DPLR_HOME, else the user data directory)")
	fs.DurationVar(&pf.timeout, "plugin-timeout", 10*time.Second, "time a plugin may take to start, to answer its catalogue and to shut down")
	fs.Int64Var(&pf.maxOutput, "max-output", 0, "bound in `BYTES` on the total size of a fit's output matrices; a plugin returning more fails (default: a quarter of physical memory)")
	fs.BoolVar(&pf.verbose, "v", false, "show plugins' own log output on stderr")
}

// checkedHome is homeDir, refused (a usage error, nothing run or spent)
// when it names something other than a directory: a DPLR_HOME that is a
// file would otherwise fail later, in the data cache or the ledger, with a
// misleading message.
func (pf *pluginFlags) checkedHome(env *Env) (string, error) {
	home := pf.homeDir(env)
	st, err := os.Stat(home)
	switch {
	case err == nil && !st.IsDir():
		return "", usagef("the dplr home %s (--home or $DPLR_HOME) is not a directory; nothing was run or spent", home)
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return "", usagef("the dplr home %s (--home or $DPLR_HOME) cannot be used: %v; nothing was run or spent", home, err)
	}
	return home, nil
}

func (pf *pluginFlags) homeDir(env *Env) string {
	if pf.home != "" {
		return pf.home
	}
	h, err := ledger.HomeDir()
	if err != nil {
		return ".dplr"
	}
	return h
}

// registry is the set of plugins started for one command.
type registry struct {
	plugins  []*host.Plugin
	failures []error
	failed   map[string]error // plugin path → why it did not start
	shadowed []host.Shadowed  // executables hidden by one of the same name earlier in the search path
}

func (r *registry) close() {
	for _, p := range r.plugins {
		p.Close()
	}
}

// Find returns the plugin serving estimator (the first in search order);
// it makes the registry a host.Registry.
func (r *registry) Find(estimator string) (*host.Plugin, sdk.Info, bool) {
	return host.Plugins(r.plugins).Find(estimator)
}

func (r *registry) estimatorNames() []string {
	var out []string
	for _, p := range r.plugins {
		for _, e := range p.Estimators {
			out = append(out, e.Name)
		}
	}
	sort.Strings(out)
	return out
}

// options returns the host options the flags describe.
func (pf *pluginFlags) options(env *Env) (host.Options, error) {
	opt := host.Options{StartTimeout: pf.timeout, CallTimeout: pf.timeout, MaxOutputBytes: pf.maxOutput}
	if pf.maxOutput < 0 {
		return opt, usagef("--max-output must be a positive number of bytes")
	}
	if pf.verbose {
		opt.Stderr = env.Stderr
	}
	if pf.manifest != "" {
		m, err := host.ReadManifest(pf.manifest)
		if err != nil {
			return opt, fail(ExitUsage, err)
		}
		opt.Manifest = m
	}
	return opt, nil
}

// discover lists the plugin executables of the search path (--plugin-dir
// first, then host.DefaultDirs), the ones hidden by an earlier plugin of the
// same name, and the directories searched.
func (pf *pluginFlags) discover(env *Env) ([]string, []host.Shadowed, []string) {
	dirs := append(append([]string(nil), pf.dirs...), host.DefaultDirs(pf.homeDir(env))...)
	found, shadowed := host.DiscoverAll(dirs)
	return found, shadowed, dirs
}

// startPlugins discovers and starts every plugin concurrently. Plugins that
// fail are recorded, never fatal.
func (pf *pluginFlags) startPlugins(ctx context.Context, env *Env) (*registry, error) {
	opt, err := pf.options(env)
	if err != nil {
		return nil, err
	}
	paths, shadowed, dirs := pf.discover(env)
	if len(paths) == 0 {
		return &registry{}, fail(ExitPlugin, fmt.Errorf("no dplr-* plugins found in %s (build them with `make build`)", strings.Join(dirs, ", ")))
	}
	reg := startAll(ctx, paths, opt)
	reg.shadowed = shadowed
	return reg, nil
}

func startAll(ctx context.Context, paths []string, opt host.Options) *registry {
	reg := &registry{}
	plugins := make([]*host.Plugin, len(paths))
	errs := make([]error, len(paths))
	var wg sync.WaitGroup
	for i, path := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			plugins[i], errs[i] = host.Start(ctx, path, opt)
		}()
	}
	wg.Wait()
	seen := map[string]string{}
	for i, path := range paths {
		if errs[i] != nil {
			reg.failures = append(reg.failures, errs[i])
			if reg.failed == nil {
				reg.failed = map[string]error{}
			}
			reg.failed[path] = errs[i]
			continue
		}
		p := plugins[i]
		dup := false
		for _, e := range p.Estimators {
			if other, ok := seen[e.Name]; ok {
				reg.failures = append(reg.failures, fmt.Errorf("plugin %s: estimator %q already served by %s; ignoring this plugin", p.Path, e.Name, other))
				dup = true
				break
			}
		}
		if dup {
			p.Close()
			continue
		}
		for _, e := range p.Estimators {
			seen[e.Name] = p.Path
		}
		reg.plugins = append(reg.plugins, p)
	}
	return reg
}

// startFor starts only what is needed to serve estimator: first the plugin
// whose name is the estimator's prefix before its first '-' (the naming
// convention of first-party plugins), then, if that one does not serve it,
// every plugin.
func (pf *pluginFlags) startFor(ctx context.Context, env *Env, estimator string) (*registry, error) {
	opt, err := pf.options(env)
	if err != nil {
		return nil, err
	}
	paths, shadowed, dirs := pf.discover(env)
	if len(paths) == 0 {
		return &registry{}, fail(ExitPlugin, fmt.Errorf("no dplr-* plugins found in %s (build them with `make build`)", strings.Join(dirs, ", ")))
	}
	prefix, _, _ := strings.Cut(estimator, "-")
	var prefixErr error // why the plugin named after the estimator did not start
	for _, path := range paths {
		if filepath.Base(path) != host.PluginPrefix+prefix {
			continue
		}
		p, err := host.Start(ctx, path, opt)
		if err == nil {
			if _, ok := p.Estimator(estimator); ok {
				return &registry{plugins: []*host.Plugin{p}, shadowed: shadowed}, nil
			}
			p.Close()
		}
		prefixErr = err
		break
	}
	reg := startAll(ctx, paths, opt)
	reg.shadowed = shadowed
	if _, _, ok := reg.Find(estimator); !ok && prefixErr != nil {
		// The plugin that should serve the estimator is broken: a plugin
		// failure (exit 4, with its exit status and stderr), not a usage
		// error.
		return reg, fail(ExitPlugin, prefixErr)
	}
	return reg, nil
}

// unserved is the error for an estimator no started plugin serves: a
// plugin failure (exit 4) when the plugin named after the estimator's
// prefix (the first-party convention) exists but did not start, a usage
// error naming the known estimators otherwise.
func unserved(env *Env, reg *registry, estimator string) error {
	prefix, _, _ := strings.Cut(estimator, "-")
	for path, err := range reg.failed {
		if filepath.Base(path) == host.PluginPrefix+prefix {
			return fail(ExitPlugin, fmt.Errorf("estimator %q: its plugin did not start: %w", estimator, err))
		}
	}
	warnFailures(env, reg)
	return usagef("no plugin serves estimator %q (known: %s)", estimator, strings.Join(reg.estimatorNames(), ", "))
}

func warnFailures(env *Env, reg *registry) {
	for _, err := range reg.failures {
		fmt.Fprintf(env.Stderr, "dplr: warning: %v\n", err)
	}
}

// noteShadowed tells the user which installed plugins are never used
// because a plugin of the same name comes earlier in the search path; with
// by set, only those hidden by that executable (the one about to be used).
func noteShadowed(env *Env, reg *registry, by string) {
	for _, s := range reg.shadowed {
		if by == "" || s.By == by {
			fmt.Fprintf(env.Stderr, "dplr: note: %s is not used: %s of the same name comes first in the plugin search path\n", s.Path, s.By)
		}
	}
}

// pluginJSON is the `dplr plugins --json` schema.
type pluginJSON struct {
	Name       string          `json:"name"`
	Version    string          `json:"version"`
	Path       string          `json:"path"`
	Backend    string          `json:"backend"`
	Threads    int32           `json:"backend_threads"`
	Estimators []estimatorJSON `json:"estimators"`
}

type estimatorJSON struct {
	Name       string      `json:"name"`
	Version    string      `json:"version"`
	Summary    string      `json:"summary"`
	DataKind   string      `json:"data_kind"`
	Guarantee  string      `json:"guarantee"`
	Grants     []string    `json:"grants"`
	Params     []paramJSON `json:"params"`
	References []string    `json:"references,omitempty"`
}

type paramJSON struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	Default  string   `json:"default,omitempty"`
	Min      *float64 `json:"min,omitempty"`
	Max      *float64 `json:"max,omitempty"`
	Choices  []string `json:"choices,omitempty"`
	Required bool     `json:"required,omitempty"`
	Doc      string   `json:"doc"`
}

func toEstimatorJSON(e sdk.Info) estimatorJSON {
	out := estimatorJSON{Name: e.Name, Version: e.Version, Summary: e.Summary, DataKind: string(e.DataKind),
		Guarantee: e.Guarantee, References: e.References, Params: []paramJSON{}, Grants: []string{}}
	for _, g := range e.Grants {
		out.Grants = append(out.Grants, string(g))
	}
	for _, p := range e.Params {
		out.Params = append(out.Params, paramJSON{Name: p.Name, Type: string(p.Type), Default: p.Default,
			Min: p.Min, Max: p.Max, Choices: p.Choices, Required: p.Required, Doc: p.Doc})
	}
	return out
}

func cmdPlugins(ctx context.Context, env *Env, args []string) error {
	fs := newFlags("plugins", "[--json]", env)
	var pf pluginFlags
	pf.register(fs)
	asJSON := fs.Bool("json", false, "print the catalogue as JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	reg, err := pf.startPlugins(ctx, env)
	if reg != nil {
		defer reg.close()
	}
	if err != nil {
		return err
	}
	warnFailures(env, reg)
	noteShadowed(env, reg, "")
	if *asJSON {
		out := []pluginJSON{}
		for _, p := range reg.plugins {
			pj := pluginJSON{Name: p.Name(), Version: p.Version(), Path: p.Path, Backend: p.Backend(),
				Threads: int32(p.Threads())}
			for _, e := range p.Estimators {
				pj.Estimators = append(pj.Estimators, toEstimatorJSON(e))
			}
			out = append(out, pj)
		}
		return writeJSON(env.Stdout, out)
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	for _, p := range reg.plugins {
		fmt.Fprintf(tw, "%s %s\t(%s backend, %s)\n", p.Name(), p.Version(), p.Backend(), p.Path)
		for _, e := range p.Estimators {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", e.Name, e.DataKind, e.Summary)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, sandbox := host.SandboxStatus()
	fmt.Fprintf(env.Stdout, "\nsandbox: %s\n", sandbox)
	if len(reg.plugins) == 0 {
		return fail(ExitPlugin, errors.New("no plugin could be started"))
	}
	return nil
}

func cmdDescribe(ctx context.Context, env *Env, args []string) error {
	fs := newFlags("describe", "ESTIMATOR [--json]", env)
	var pf pluginFlags
	pf.register(fs)
	asJSON := fs.Bool("json", false, "print as JSON")
	if err := parse(fs, reorder(fs, args)); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("describe takes one estimator name")
	}
	reg, err := pf.startFor(ctx, env, fs.Arg(0))
	if reg != nil {
		defer reg.close()
	}
	if err != nil {
		return err
	}
	p, info, ok := reg.Find(fs.Arg(0))
	if !ok {
		return unserved(env, reg, fs.Arg(0))
	}
	noteShadowed(env, reg, p.Path)
	if *asJSON {
		return writeJSON(env.Stdout, toEstimatorJSON(info))
	}
	describe(env.Stdout, p, info)
	return nil
}

func describe(w io.Writer, p *host.Plugin, e sdk.Info) {
	fmt.Fprintf(w, "%s %s — %s\n", e.Name, e.Version, e.Summary)
	fmt.Fprintf(w, "plugin: %s (%s backend, %s)\n", p.Name(), p.Backend(), p.Path)
	fmt.Fprintf(w, "data: %s\n", e.DataKind)
	fmt.Fprintf(w, "guarantee: %s\n", e.Guarantee)
	grants := make([]string, 0, len(e.Grants))
	for _, g := range e.Grants {
		grants = append(grants, string(g))
	}
	fmt.Fprintf(w, "budgets accepted: %s\n", strings.Join(grants, ", "))
	if e.Description != "" {
		fmt.Fprintf(w, "\n%s\n", e.Description)
	}
	fmt.Fprintf(w, "\nParameters (--set name=value):\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range e.Params {
		rng := ""
		switch {
		case len(s.Choices) > 0:
			rng = "{" + strings.Join(s.Choices, ", ") + "}"
		case s.Min != nil && s.Max != nil:
			rng = fmt.Sprintf("[%g, %g]", *s.Min, *s.Max)
		case s.Min != nil:
			rng = fmt.Sprintf("≥ %g", *s.Min)
		case s.Max != nil:
			rng = fmt.Sprintf("≤ %g", *s.Max)
		}
		def := s.Default
		if s.Required {
			def = "(required)"
		} else if def == "" {
			def = "(unset)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", s.Name, s.Type, def, rng, s.Doc)
	}
	_ = tw.Flush()
	if len(e.References) > 0 {
		fmt.Fprintf(w, "\nReferences:\n")
		for _, r := range e.References {
			fmt.Fprintf(w, "  - %s\n", r)
		}
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// reorder moves positional arguments after the flags so that
// "dplr fit NAME --epsilon 1" parses like "dplr fit --epsilon 1 NAME". A
// flag takes the next argument as its value unless fs knows it as a
// boolean flag (its Value has IsBoolFlag() true, as flag.Bool's do) or it
// is written -flag=value; -h, -help and flags fs does not know take none
// (parsing then reports the unknown flag).
func reorder(fs *flag.FlagSet, args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			// Keep the terminator: what follows is positional even if it
			// starts with '-'.
			pos = append(append(pos, a), args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			flags = append(flags, a)
			if !strings.Contains(a, "=") && i+1 < len(args) && takesValue(fs, a) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, pos...)
}

// takesValue reports whether the flag argument a (e.g. "--epsilon") names
// a flag of fs that is not boolean.
func takesValue(fs *flag.FlagSet, a string) bool {
	f := fs.Lookup(strings.TrimLeft(a, "-"))
	if f == nil {
		return false
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return false
	}
	return true
}
