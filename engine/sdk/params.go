package sdk

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ParamType is the type of an estimator parameter.
type ParamType string

// Parameter types.
const (
	Int    ParamType = "int"
	Float  ParamType = "float"
	String ParamType = "string"
	Bool   ParamType = "bool"
)

// ParamSpec describes one estimator parameter in the catalogue.
type ParamSpec struct {
	Name     string
	Type     ParamType
	Default  string   // "" with Required = false means "unset"
	Min, Max *float64 // inclusive numeric range, nil when unbounded
	// ExclusiveMin and ExclusiveMax are exclusive bounds (the value must be
	// greater than ExclusiveMin, less than ExclusiveMax), nil when absent.
	ExclusiveMin, ExclusiveMax *float64
	Choices                    []string // allowed values of a String parameter
	Required                   bool
	Doc                        string
	// RenamedTo, when set, marks a former parameter name and lists the
	// parameters that replaced it. The name stays in the catalogue only so
	// that a request using it is refused with an error naming its
	// replacement (see Renamed); it takes no value.
	RenamedTo []string
}

// Bound is a helper for ParamSpec.Min and Max.
func Bound(v float64) *float64 { return &v }

// Params holds validated parameter values.
type Params struct {
	specs  map[string]ParamSpec
	values map[string]string
}

// MissingParamError is the error ValidateParams returns when a required
// parameter is not given.
type MissingParamError struct {
	Name string // the parameter's name
}

// Error implements error.
func (e *MissingParamError) Error() string { return fmt.Sprintf("parameter %q is required", e.Name) }

// CheckSpecs checks a catalogue's parameter specs, as a plugin server does
// before serving them and a host does on receiving them: every parameter
// has a non-empty name used once and a known type, Min ≤ Max, and every
// default passes the parameter's own type, range and choice checks.
func CheckSpecs(specs []ParamSpec) error {
	seen := make(map[string]bool, len(specs))
	for _, s := range specs {
		if s.Name == "" {
			return errors.New("a parameter has no name")
		}
		if seen[s.Name] {
			return fmt.Errorf("parameter %q is listed twice", s.Name)
		}
		seen[s.Name] = true
		switch s.Type {
		case Int, Float, String, Bool:
		default:
			return fmt.Errorf("parameter %q has unknown type %q", s.Name, s.Type)
		}
		if s.Min != nil && s.Max != nil && !(*s.Min <= *s.Max) {
			return fmt.Errorf("parameter %q: minimum %v exceeds maximum %v", s.Name, *s.Min, *s.Max)
		}
		if err := checkRange(s); err != nil {
			return err
		}
		if s.Default != "" {
			if err := checkValue(s, s.Default); err != nil {
				return fmt.Errorf("default: %w", err)
			}
		}
	}
	return checkRenames(specs)
}

// checkRenames checks that every former name is a string parameter
// without a value of its own, renamed to parameters of the same catalogue
// that are not former names themselves.
func checkRenames(specs []ParamSpec) error {
	current := make(map[string]bool, len(specs))
	for _, s := range specs {
		current[s.Name] = len(s.RenamedTo) == 0
	}
	for _, s := range specs {
		if len(s.RenamedTo) == 0 {
			continue
		}
		if s.Type != String || s.Default != "" || s.Required || len(s.Choices) > 0 {
			return fmt.Errorf("parameter %q: a former name takes no value, default or choices", s.Name)
		}
		for _, to := range s.RenamedTo {
			if !current[to] {
				return fmt.Errorf("parameter %q: renamed to %q, which is not a current parameter", s.Name, to)
			}
		}
	}
	return nil
}

// renamedError is the refusal of a request that uses the former name s: it
// names the replacements and the values they take.
func renamedError(s ParamSpec, specs map[string]ParamSpec) error {
	parts := make([]string, len(s.RenamedTo))
	for i, to := range s.RenamedTo {
		parts[i] = fmt.Sprintf("%s= (%s)", to, valuesOf(specs[to]))
	}
	verb := "was renamed"
	if len(parts) > 1 {
		verb = "was replaced by"
	}
	return fmt.Errorf("%s= %s %s", s.Name, verb, strings.Join(parts, " and "))
}

// valuesOf says in words which values a parameter takes.
func valuesOf(s ParamSpec) string {
	if len(s.Choices) > 0 {
		return "values: " + strings.Join(s.Choices, ", ")
	}
	return map[ParamType]string{Int: "an integer", Float: "a number", Bool: "true or false", String: "text"}[s.Type]
}

// ValidateParams checks raw key=value settings against specs, fills
// defaults and returns the typed parameters. Unknown names, former names
// (an error naming the replacement), values of the wrong type, non-finite
// or out-of-range numbers and missing required values (a
// *MissingParamError) are errors. A parameter set by a private
// selection's grid (select=) takes the grid's first value here.
func ValidateParams(specs []ParamSpec, raw map[string]string) (Params, error) {
	raw = firstCandidate(specs, raw)
	p := Params{specs: map[string]ParamSpec{}, values: map[string]string{}}
	for _, s := range specs {
		p.specs[s.Name] = s
	}
	keys := slices.Sorted(maps.Keys(raw))
	for _, k := range keys {
		s, ok := p.specs[k]
		if !ok {
			names := make([]string, 0, len(specs))
			for _, s := range specs {
				if len(s.RenamedTo) == 0 {
					names = append(names, s.Name)
				}
			}
			return Params{}, fmt.Errorf("unknown parameter %q (known: %s)", k, strings.Join(names, ", "))
		}
		if len(s.RenamedTo) > 0 {
			return Params{}, renamedError(s, p.specs)
		}
	}
	for _, s := range specs {
		v, ok := raw[s.Name]
		if !ok {
			if s.Required {
				return Params{}, &MissingParamError{Name: s.Name}
			}
			v = s.Default
		}
		if v == "" {
			continue
		}
		if err := checkValue(s, v); err != nil {
			return Params{}, err
		}
		p.values[s.Name] = v
	}
	return p, nil
}

func checkValue(s ParamSpec, v string) error {
	var x float64
	switch s.Type {
	case Int:
		i, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("parameter %q: %q is not an integer", s.Name, v)
		}
		x = float64(i)
	case Float:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) {
			return fmt.Errorf("parameter %q: %q is not a number", s.Name, v)
		}
		if math.IsInf(f, 0) {
			return fmt.Errorf("parameter %q: %q is not a finite number", s.Name, v)
		}
		x = f
	case Bool:
		if _, err := strconv.ParseBool(v); err != nil {
			return fmt.Errorf("parameter %q: %q is not true or false", s.Name, v)
		}
		return nil
	case String:
		if len(s.Choices) > 0 && !slices.Contains(s.Choices, v) {
			return fmt.Errorf("parameter %q: %q is not one of %s", s.Name, v, strings.Join(s.Choices, ", "))
		}
		return nil
	default:
		return fmt.Errorf("parameter %q has unknown type %q", s.Name, s.Type)
	}
	if s.Min != nil && x < *s.Min {
		return fmt.Errorf("parameter %q: %v is below its minimum %v", s.Name, v, *s.Min)
	}
	if s.Max != nil && x > *s.Max {
		return fmt.Errorf("parameter %q: %v is above its maximum %v", s.Name, v, *s.Max)
	}
	if s.ExclusiveMin != nil && !(x > *s.ExclusiveMin) {
		return fmt.Errorf("parameter %q: %v must be greater than %v", s.Name, v, *s.ExclusiveMin)
	}
	if s.ExclusiveMax != nil && !(x < *s.ExclusiveMax) {
		return fmt.Errorf("parameter %q: %v must be less than %v", s.Name, v, *s.ExclusiveMax)
	}
	return nil
}

// checkRange refuses bounds that leave no value: the tightest lower bound
// must lie below the tightest upper one (or equal it when both are
// inclusive).
func checkRange(s ParamSpec) error {
	if (s.ExclusiveMin != nil || s.ExclusiveMax != nil) && s.Type != Int && s.Type != Float {
		return fmt.Errorf("parameter %q: exclusive bounds on a %s parameter", s.Name, s.Type)
	}
	lo, loOpen := math.Inf(-1), false
	if s.Min != nil {
		lo = *s.Min
	}
	if s.ExclusiveMin != nil && *s.ExclusiveMin >= lo {
		lo, loOpen = *s.ExclusiveMin, true
	}
	hi, hiOpen := math.Inf(1), false
	if s.Max != nil {
		hi = *s.Max
	}
	if s.ExclusiveMax != nil && *s.ExclusiveMax <= hi {
		hi, hiOpen = *s.ExclusiveMax, true
	}
	if lo > hi || (lo == hi && (loOpen || hiOpen)) {
		return fmt.Errorf("parameter %q: its bounds leave no value", s.Name)
	}
	return nil
}

// Inclusive returns the spec with its exclusive bounds folded into Min and
// Max without changing which values pass: for a float, x > g exactly when
// x ≥ the next float64 above g; for an integer, x > g exactly when
// x ≥ ⌊g⌋ + 1. The catalogue's wire form carries only inclusive bounds, so
// a host that knows nothing of exclusive bounds still refuses the same
// values. The doc notes the exclusive bound.
func (s ParamSpec) Inclusive() ParamSpec {
	if s.ExclusiveMin == nil && s.ExclusiveMax == nil {
		return s
	}
	var notes []string
	if g := s.ExclusiveMin; g != nil {
		lo := math.Nextafter(*g, math.Inf(1))
		if s.Type == Int {
			lo = math.Floor(*g) + 1
		}
		if s.Min == nil || lo > *s.Min {
			s.Min = &lo
		}
		notes = append(notes, "> "+strconv.FormatFloat(*g, 'g', -1, 64))
	}
	if l := s.ExclusiveMax; l != nil {
		hi := math.Nextafter(*l, math.Inf(-1))
		if s.Type == Int {
			hi = math.Ceil(*l) - 1
		}
		if s.Max == nil || hi < *s.Max {
			s.Max = &hi
		}
		notes = append(notes, "< "+strconv.FormatFloat(*l, 'g', -1, 64))
	}
	s.ExclusiveMin, s.ExclusiveMax = nil, nil
	note := "(must be " + strings.Join(notes, " and ") + ")"
	if s.Doc == "" {
		s.Doc = note
	} else {
		s.Doc += " " + note
	}
	return s
}

// Has reports whether the parameter has a value (set or defaulted).
func (p Params) Has(name string) bool { _, ok := p.values[name]; return ok }

// Raw returns the validated values as strings.
func (p Params) Raw() map[string]string {
	out := make(map[string]string, len(p.values))
	maps.Copy(out, p.values)
	return out
}

// Int returns an integer parameter (0 when unset).
func (p Params) Int(name string) int {
	i, _ := strconv.ParseInt(p.values[name], 10, 64)
	return int(i)
}

// Float returns a float parameter (NaN when unset).
func (p Params) Float(name string) float64 {
	v, ok := p.values[name]
	if !ok {
		return math.NaN()
	}
	f, _ := strconv.ParseFloat(v, 64)
	return f
}

// String returns a string parameter ("" when unset).
func (p Params) String(name string) string { return p.values[name] }

// Bool returns a boolean parameter (false when unset).
func (p Params) Bool(name string) bool { b, _ := strconv.ParseBool(p.values[name]); return b }
