// Package suite is dplr's benchmark suite: scenarios declared in TOML files
// (bench/scenarios/*.toml), a runner that executes every cell through the
// real host and plugins as fresh processes — compared variants interleaved
// so machine drift cancels, finished cells skipped on re-runs — and a report
// generator that writes medians, spreads and ratios to markdown and draws
// the plots (PNG and SVG).
package suite

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// Scenario is one study, read from a TOML file.
type Scenario struct {
	Name        string `toml:"name"`
	Title       string `toml:"title"`
	Description string `toml:"description"`
	// Kind is "accuracy" (medians of a metric over seeds) or "timing"
	// (medians of wall time; variants compared by ratio to the first).
	Kind string `toml:"kind"`
	// Quick scenarios run in `make bench` (with QuickRepetitions).
	Quick            bool      `toml:"quick"`
	Repetitions      int       `toml:"repetitions"`
	QuickRepetitions int       `toml:"quick_repetitions"`
	Epsilons         []float64 `toml:"epsilons"`
	Delta            float64   `toml:"delta"`
	Data             DataSpec  `toml:"data"`
	Sweep            *Sweep    `toml:"sweep"`
	Variants         []Variant `toml:"variants"`
	Report           Report    `toml:"report"`
	// TimeoutSeconds bounds one fit (default 600).
	TimeoutSeconds float64 `toml:"timeout_seconds"`

	file string
}

// DataSpec names the data: a `dplr gen` model or a file.
type DataSpec struct {
	Model  string            `toml:"model"`
	Params map[string]string `toml:"params"`
	// FixedSeed, when set, uses one data set for every repetition (the
	// repetitions then vary only the noise); otherwise repetition k draws
	// its data with seed k.
	FixedSeed *uint64  `toml:"fixed_seed"`
	Path      string   `toml:"path"`
	Args      []string `toml:"args"` // extra data flags for a file, e.g. ["--scale", "0.00392156862745098"]
}

// Sweep varies one data-model parameter (the x axis) at a fixed ε.
type Sweep struct {
	Param   string   `toml:"param"`
	Values  []string `toml:"values"`
	Epsilon float64  `toml:"epsilon"`
}

// Variant is one compared configuration.
type Variant struct {
	Name       string            `toml:"name"`
	Estimator  string            `toml:"estimator"`
	PluginDir  string            `toml:"plugin_dir"` // default bin/plugins
	Params     map[string]string `toml:"params"`
	NonPrivate bool              `toml:"non_private"`
	// PureOnly variants get a pure ε budget (no δ).
	PureOnly bool `toml:"pure"`
	// Command, when set, runs instead of the host's "dplr fit" (its first
	// element the program, relative to the repository root) with the same
	// arguments, e.g. ["bin/bench", "inproc"] for an in-process fit.
	Command []string `toml:"command"`
}

// Report says what to tabulate and draw.
type Report struct {
	Metric string `toml:"metric"` // a metrics/scalars name from result.json, or "wall_s"
	Label  string `toml:"label"`
	LogX   bool   `toml:"logx"`
	LogY   bool   `toml:"logy"`
	// Theory names a rate curve (see theories) drawn with its constant
	// fitted to the first variant's medians.
	Theory string `toml:"theory"`
	// Extra metrics tabulated beside the main one.
	Extra []string `toml:"extra"`
	// Formulas name curves drawn with their own constants, not fitted
	// (bounds and sharp predictions; see formulas in theory.go), and
	// tabulated beside the medians.
	Formulas []string `toml:"formulas"`
}

// Load reads and validates scenario files.
func Load(paths ...string) ([]*Scenario, error) {
	var out []*Scenario
	for _, p := range paths {
		var s Scenario
		md, err := toml.DecodeFile(p, &s)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", p, err)
		}
		if und := md.Undecoded(); len(und) > 0 {
			keys := make([]string, len(und))
			for i, k := range und {
				keys[i] = k.String()
			}
			return nil, fmt.Errorf("scenario %s: unknown keys %s", p, strings.Join(keys, ", "))
		}
		s.file = p
		if err := s.validate(); err != nil {
			return nil, fmt.Errorf("scenario %s: %w", p, err)
		}
		out = append(out, &s)
	}
	return out, nil
}

// LoadDir reads every *.toml scenario in dir, in name order (filepath.Glob
// sorts).
func LoadDir(dir string) ([]*Scenario, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.toml"))
	if err != nil {
		return nil, err
	}
	return Load(paths...)
}

func (s *Scenario) validate() error {
	if s.Name == "" {
		return fmt.Errorf("no name")
	}
	switch s.Kind {
	case "accuracy", "timing":
	default:
		return fmt.Errorf("kind %q: want accuracy or timing", s.Kind)
	}
	if s.Repetitions < 1 {
		return fmt.Errorf("repetitions must be ≥ 1")
	}
	if s.QuickRepetitions < 1 {
		s.QuickRepetitions = min(2, s.Repetitions)
	}
	s.Delta = cmp.Or(s.Delta, 1e-6)
	if !(s.Delta > 0 && s.Delta < 1) {
		return fmt.Errorf("delta %v not in (0, 1)", s.Delta)
	}
	if s.Sweep == nil && len(s.Epsilons) == 0 {
		return fmt.Errorf("give epsilons or a sweep")
	}
	for _, e := range s.Epsilons {
		if !(e > 0) || math.IsInf(e, 0) {
			return fmt.Errorf("epsilon %v must be positive and finite (use a non_private variant for ε = ∞)", e)
		}
	}
	if s.Sweep != nil && (s.Sweep.Param == "" || len(s.Sweep.Values) == 0 || !(s.Sweep.Epsilon > 0)) {
		return fmt.Errorf("sweep needs param, values and a positive epsilon")
	}
	if (s.Data.Model == "") == (s.Data.Path == "") {
		return fmt.Errorf("data needs exactly one of model or path")
	}
	if s.Sweep != nil && s.Data.Model == "" {
		return fmt.Errorf("a sweep varies a model parameter: data.model is required")
	}
	if len(s.Variants) == 0 {
		return fmt.Errorf("no variants")
	}
	seen := map[string]bool{}
	for i := range s.Variants {
		v := &s.Variants[i]
		if v.Name == "" || v.Estimator == "" {
			return fmt.Errorf("variant %d needs name and estimator", i)
		}
		if seen[v.Name] {
			return fmt.Errorf("variant %q twice", v.Name)
		}
		seen[v.Name] = true
		v.PluginDir = cmp.Or(v.PluginDir, "bin/plugins")
	}
	if s.Report.Metric == "" {
		if s.Kind == "timing" {
			s.Report.Metric = "wall_s"
		} else {
			return fmt.Errorf("report.metric is required for accuracy scenarios")
		}
	}
	if s.Report.Theory != "" {
		if _, ok := theories[s.Report.Theory]; !ok {
			return fmt.Errorf("unknown theory curve %q (known: %s)", s.Report.Theory, strings.Join(slices.Sorted(maps.Keys(theories)), ", "))
		}
	}
	for _, f := range s.Report.Formulas {
		if _, ok := formulas[f]; !ok {
			return fmt.Errorf("unknown formula curve %q (known: %s)", f, strings.Join(slices.Sorted(maps.Keys(formulas)), ", "))
		}
	}
	s.TimeoutSeconds = cmp.Or(s.TimeoutSeconds, 600)
	return nil
}

// xName is the x axis's name.
func (s *Scenario) xName() string {
	if s.Sweep != nil {
		return s.Sweep.Param
	}
	return "epsilon"
}

// Cell is one fit to run.
type Cell struct {
	Variant *Variant
	X       string  // the ε or sweep value, as text
	Epsilon float64 // the budget's ε
	Rep     int
}

// Key identifies a cell in the results file.
func (c Cell) Key() string { return fmt.Sprintf("%s|%s|%d", c.Variant.Name, c.X, c.Rep) }

// Cells expands the scenario in run order: for each x and repetition, the
// variants back to back (A B C A B C ...), so drift hits all alike.
func (s *Scenario) Cells(reps int) []Cell {
	var xs []string
	var eps []float64
	if s.Sweep != nil {
		xs = s.Sweep.Values
		for range xs {
			eps = append(eps, s.Sweep.Epsilon)
		}
	} else {
		for _, e := range s.Epsilons {
			xs = append(xs, fmt.Sprint(e))
			eps = append(eps, e)
		}
	}
	var out []Cell
	for rep := 0; rep < reps; rep++ {
		for i, x := range xs {
			for vi := range s.Variants {
				v := &s.Variants[vi]
				if v.NonPrivate && i > 0 && s.Sweep == nil {
					continue // ε does not matter: one cell per repetition
				}
				out = append(out, Cell{Variant: v, X: x, Epsilon: eps[i], Rep: rep})
			}
		}
	}
	return out
}
