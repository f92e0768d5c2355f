package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dplr/dplr/client"
)

// pluginFlags are the flags every plugin-using command shares.
type pluginFlags struct {
	dirs     multiFlag
	manifest string
	home     string
	timeout  time.Duration
	verbose  bool
	// maxOutput bounds a fit's output matrices together, in bytes (0:
	// a quarter of physical memory).
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
	h, err := client.HomeDir()
	if err != nil {
		return ".dplr"
	}
	return h
}

// newClient is the client the flags describe: the plugin search path
// (--plugin-dir first), the manifest, the timeouts and bounds; maxMemory is
// --max-memory (0: no limit).
func (pf *pluginFlags) newClient(env *Env, home string, maxMemory int64) (*client.Client, error) {
	if pf.maxOutput < 0 {
		return nil, usagef("--max-output must be a positive number of bytes")
	}
	opt := client.Options{Home: home, PluginDirs: pf.dirs, Manifest: pf.manifest, PluginTimeout: max(pf.timeout, 0),
		MaxOutputBytes: pf.maxOutput, MaxMemory: maxMemory}
	if maxMemory == 0 {
		opt.MaxMemory = client.NoMemoryLimit
	}
	if pf.verbose {
		opt.PluginLog = env.Stderr
	}
	return client.New(opt)
}

// lookupFailure is the error for an estimator the client could not find:
// for an unknown estimator, the plugins that failed to start are reported
// first, as warnings.
func lookupFailure(env *Env, c *client.Client, err error) error {
	if errors.Is(err, client.ErrUnknownEstimator) {
		warnFailures(env, c.StartFailures())
	}
	return err
}

func warnFailures(env *Env, failures []error) {
	for _, err := range failures {
		fmt.Fprintf(env.Stderr, "dplr: warning: %v\n", err)
	}
}

// noteShadowed tells the user which installed plugins are never used
// because a plugin of the same name comes earlier in the search path; with
// by set, only those hidden by that executable (the one about to be used).
func noteShadowed(env *Env, shadowed []client.Shadowed, by string) {
	for _, s := range shadowed {
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
	// Remote: the estimator also runs on a data set it reaches only
	// through aggregation passes the host runs (dplr fit --engine beam).
	Remote bool `json:"remote,omitempty"`
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

func toEstimatorJSON(e client.EstimatorInfo) estimatorJSON {
	out := estimatorJSON{Name: e.Name, Version: e.Version, Summary: e.Summary, DataKind: string(e.DataKind),
		Guarantee: e.Guarantee, References: e.References, Params: []paramJSON{}, Grants: []string{}, Remote: e.Remote}
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
	c, err := pf.newClient(env, pf.homeDir(env), 0)
	if err != nil {
		return err
	}
	defer c.Close()
	plugins, err := c.Plugins(ctx)
	if err != nil {
		return err
	}
	warnFailures(env, c.StartFailures())
	noteShadowed(env, c.Shadowed(), "")
	if *asJSON {
		out := []pluginJSON{}
		for _, p := range plugins {
			pj := pluginJSON{Name: p.Name, Version: p.Version, Path: p.Path, Backend: p.Backend,
				Threads: int32(p.Threads)}
			for _, e := range p.Estimators {
				pj.Estimators = append(pj.Estimators, toEstimatorJSON(e))
			}
			out = append(out, pj)
		}
		return writeJSON(env.Stdout, out)
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	for _, p := range plugins {
		fmt.Fprintf(tw, "%s %s\t(%s backend, %s)\n", p.Name, p.Version, p.Backend, p.Path)
		for _, e := range p.Estimators {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", e.Name, e.DataKind, e.Summary)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, sandbox := client.SandboxStatus()
	fmt.Fprintf(env.Stdout, "\nsandbox: %s\n", sandbox)
	if len(plugins) == 0 {
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
	c, err := pf.newClient(env, pf.homeDir(env), 0)
	if err != nil {
		return err
	}
	defer c.Close()
	est, err := c.Describe(ctx, fs.Arg(0))
	if err != nil {
		return lookupFailure(env, c, err)
	}
	noteShadowed(env, c.Shadowed(), est.Plugin.Path)
	info := est.Info
	if *asJSON {
		return writeJSON(env.Stdout, toEstimatorJSON(info))
	}
	describe(env.Stdout, est.Plugin, info)
	return nil
}

// engines says how --engine beam can reach an estimator's data.
func engines(e client.EstimatorInfo) string {
	if e.Remote {
		return " (--engine beam: through aggregation passes)"
	}
	return ""
}

func describe(w io.Writer, p client.PluginInfo, e client.EstimatorInfo) {
	fmt.Fprintf(w, "%s %s — %s\n", e.Name, e.Version, e.Summary)
	fmt.Fprintf(w, "plugin: %s (%s backend, %s)\n", p.Name, p.Backend, p.Path)
	fmt.Fprintf(w, "data: %s%s\n", e.DataKind, engines(e))
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
