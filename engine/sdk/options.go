package sdk

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Typed, declarative parameters: an estimator describes its parameters
// once, as an options struct whose exported fields carry tags (param,
// default, required, min, max, gt, lt, choices, doc, renamed; their rules
// are in docs/plugins.md, "Parameters"), and sets Info.Options to a value
// of that type. The SDK derives the catalogue from it (SpecsOf), validates
// every request against it and binds the values into a fresh struct before
// Fit runs; Fit reads them with Opts.

// Renamed is the type of a marker field (_ sdk.Renamed, tagged
// param:"old" renamed:"new") that keeps a former parameter name in the
// catalogue, so that a request using it is refused naming its replacement.
type Renamed struct{}

// renamedType is the reflect type of Renamed.
var renamedType = reflect.TypeFor[Renamed]()

// paramField is one parameter of an options type: its spec and where its
// value lives in the struct.
type paramField struct {
	spec  ParamSpec
	index []int
	typ   reflect.Type
}

// tagKeys are the tags that describe a parameter (besides param).
var tagKeys = []string{"default", "required", "min", "max", "gt", "lt", "choices", "doc", "renamed"}

// SpecsOf derives the catalogue of an options struct (a value or a pointer
// to one): one ParamSpec per parameter, in field order, embedded structs
// flattened in place. It refuses unsupported field types, malformed or
// inconsistent tags and duplicate names.
//
// opts may also be an OptionSet, whose members' catalogues are
// concatenated (a name may appear in only one of them).
func SpecsOf(opts any) ([]ParamSpec, error) {
	var out []ParamSpec
	for _, proto := range protos(opts) {
		fields, err := fieldsOf(proto)
		if err != nil {
			return nil, err
		}
		for _, f := range fields {
			out = append(out, f.spec)
		}
	}
	if err := CheckSpecs(out); err != nil {
		return nil, fmt.Errorf("options: %w", err)
	}
	return out, nil
}

// OptionSet combines several options structs into one catalogue, e.g. a
// wrapper that adds its own parameters to the estimator it wraps:
//
//	info.Options = sdk.OptionSet{info.Options, evaluateOptions{}}
//
// Each member is bound separately (and its Check and Footprint hooks
// called; footprints add up), and Opts finds each by its type.
type OptionSet []any

// protos lists the option prototypes in opts, flattening OptionSets.
func protos(opts any) []any {
	set, ok := opts.(OptionSet)
	if !ok {
		return []any{opts}
	}
	var out []any
	for _, o := range set {
		out = append(out, protos(o)...)
	}
	return out
}

func optionsType(opts any) (reflect.Type, error) {
	t := reflect.TypeOf(opts)
	if t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("options must be a struct or a pointer to one, got %T", opts)
	}
	return t, nil
}

func fieldsOf(opts any) ([]paramField, error) {
	t, err := optionsType(opts)
	if err != nil {
		return nil, err
	}
	var out []paramField
	if err := walkFields(t, nil, &out); err != nil {
		return nil, fmt.Errorf("options %s: %w", t, err)
	}
	specs := make([]ParamSpec, len(out))
	for i, f := range out {
		specs[i] = f.spec
	}
	if err := CheckSpecs(specs); err != nil {
		return nil, fmt.Errorf("options %s: %w", t, err)
	}
	return out, nil
}

func walkFields(t reflect.Type, prefix []int, out *[]paramField) error {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		index := append(slices.Clone(prefix), i)
		if f.Type == renamedType {
			pf, err := renamedField(f)
			if err != nil {
				return fmt.Errorf("field %s: %w", f.Name, err)
			}
			*out = append(*out, pf)
			continue
		}
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			var sub []paramField
			if err := walkFields(f.Type, index, &sub); err != nil {
				return err
			}
			if hasParamTags(f.Tag, true) {
				if len(sub) != 1 {
					return fmt.Errorf("embedded %s: tags on an embedding field override a single parameter, but it holds %d", f.Type, len(sub))
				}
				if err := applyTags(&sub[0].spec, f.Tag, true); err != nil {
					return fmt.Errorf("embedded %s: %w", f.Type, err)
				}
				if err := checkPresence(sub[0].spec, sub[0].typ.Kind() == reflect.Pointer); err != nil {
					return fmt.Errorf("embedded %s: %w", f.Type, err)
				}
			}
			*out = append(*out, sub...)
			continue
		}
		name, ok := f.Tag.Lookup("param")
		if !ok {
			if hasParamTags(f.Tag, false) {
				return fmt.Errorf("field %s has parameter tags but no param name", f.Name)
			}
			continue
		}
		if !f.IsExported() {
			return fmt.Errorf("field %s: a parameter field must be exported", f.Name)
		}
		pf, err := newParamField(f, name, index)
		if err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		*out = append(*out, pf)
	}
	return nil
}

func hasParamTags(tag reflect.StructTag, withName bool) bool {
	if _, ok := tag.Lookup("param"); ok && withName {
		return true
	}
	for _, k := range tagKeys {
		if _, ok := tag.Lookup(k); ok {
			return true
		}
	}
	return false
}

// renamedField is the catalogue entry of a Renamed marker field: a former
// name that takes no value (it has no index: nothing is bound).
func renamedField(f reflect.StructField) (paramField, error) {
	name, ok := f.Tag.Lookup("param")
	to, ok2 := f.Tag.Lookup("renamed")
	if !ok || !ok2 || name == "" || to == "" {
		return paramField{}, errors.New(`a Renamed field needs param:"old" and renamed:"new"`)
	}
	for _, k := range tagKeys {
		if _, set := f.Tag.Lookup(k); set && k != "renamed" {
			return paramField{}, fmt.Errorf("a Renamed field takes no %s tag", k)
		}
	}
	spec := ParamSpec{Name: name, Type: String, Doc: "former name of " + to + "=, refused: give " + to + "= instead"}
	for _, t := range strings.Split(to, ",") {
		spec.RenamedTo = append(spec.RenamedTo, strings.TrimSpace(t))
	}
	return paramField{spec: spec, typ: f.Type}, nil
}

func newParamField(f reflect.StructField, name string, index []int) (paramField, error) {
	pf := paramField{index: index, typ: f.Type}
	ptr := f.Type.Kind() == reflect.Pointer
	base := f.Type
	if ptr {
		base = base.Elem()
	}
	switch {
	case base.Kind() == reflect.Int:
		pf.spec.Type = Int
	case base.Kind() == reflect.Float64:
		pf.spec.Type = Float
	case base.Kind() == reflect.String:
		pf.spec.Type = String
	case base.Kind() == reflect.Bool && !ptr:
		pf.spec.Type = Bool
	default:
		return pf, fmt.Errorf("type %s is not a parameter type (int, float64, string, bool, *int, *float64, *string)", f.Type)
	}
	pf.spec.Name = name
	if _, ok := f.Tag.Lookup("renamed"); ok {
		return pf, errors.New("renamed is a tag of a Renamed field")
	}
	if err := applyTags(&pf.spec, f.Tag, false); err != nil {
		return pf, err
	}
	if err := checkPresence(pf.spec, ptr); err != nil {
		return pf, err
	}
	return pf, nil
}

// checkPresence enforces the rules that keep a bound value from being a
// silent zero (it is re-checked after embedding-field overrides too).
func checkPresence(s ParamSpec, ptr bool) error {
	switch {
	case ptr && s.Default != "":
		return fmt.Errorf("parameter %q: an optional (pointer) parameter has no default", s.Name)
	case ptr && s.Required:
		return fmt.Errorf("parameter %q: a required parameter is not a pointer", s.Name)
	case !ptr && s.Default == "" && !s.Required && s.Type != Bool:
		return fmt.Errorf("parameter %q needs a default or required:\"true\" (use a pointer for an optional value)", s.Name)
	}
	return nil
}

// applyTags sets the spec's fields from tag; with override, a default also
// lifts required unless the tag sets required itself.
func applyTags(s *ParamSpec, tag reflect.StructTag, override bool) error {
	if v, ok := tag.Lookup("param"); ok && override {
		s.Name = v
	}
	if v, ok := tag.Lookup("doc"); ok {
		s.Doc = v
	}
	if v, ok := tag.Lookup("default"); ok {
		s.Default = v
		if override {
			s.Required = false
		}
	}
	if v, ok := tag.Lookup("required"); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("parameter %q: required:%q is not true or false", s.Name, v)
		}
		s.Required = b
	}
	bounds := []struct {
		key string
		dst **float64
	}{{"min", &s.Min}, {"max", &s.Max}, {"gt", &s.ExclusiveMin}, {"lt", &s.ExclusiveMax}}
	for _, b := range bounds {
		v, ok := tag.Lookup(b.key)
		if !ok {
			continue
		}
		if s.Type != Int && s.Type != Float {
			return fmt.Errorf("parameter %q: %s bound on a %s parameter", s.Name, b.key, s.Type)
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(x) {
			return fmt.Errorf("parameter %q: %s:%q is not a number", s.Name, b.key, v)
		}
		*b.dst = &x
	}
	if v, ok := tag.Lookup("choices"); ok {
		if s.Type != String {
			return fmt.Errorf("parameter %q: choices on a %s parameter", s.Name, s.Type)
		}
		s.Choices = nil
		for _, c := range strings.Split(v, ",") {
			s.Choices = append(s.Choices, strings.TrimSpace(c))
		}
	}
	if s.Default == "" && s.Type == Bool && !s.Required {
		s.Default = "false"
	}
	return nil
}

// bindOptions returns a pointer to a fresh options struct of the
// prototype's type holding the values of p (validated by ValidateParams
// against the same specs).
func bindOptions(proto any, fields []paramField, p Params) (any, error) {
	t, err := optionsType(proto)
	if err != nil {
		return nil, err
	}
	v := reflect.New(t).Elem()
	for _, f := range fields {
		if !p.Has(f.spec.Name) || f.index == nil {
			continue
		}
		fv := v.FieldByIndex(f.index)
		if f.typ.Kind() == reflect.Pointer {
			fv.Set(reflect.New(f.typ.Elem()))
			fv = fv.Elem()
		}
		switch name := f.spec.Name; f.spec.Type {
		case Int:
			fv.SetInt(int64(p.Int(name)))
		case Float:
			fv.SetFloat(p.Float(name))
		case String:
			fv.SetString(p.String(name))
		case Bool:
			fv.SetBool(p.Bool(name))
		}
	}
	return v.Addr().Interface(), nil
}

// Opts returns the run's bound options, a *T for the estimator whose
// Info.Options is a T (or *T), or an OptionSet with a T among its members.
// It returns nil if the run has no options of type T (a programming error
// the conformance suite reports).
func Opts[T any](run *Run) *T {
	if run == nil {
		return nil
	}
	switch o := run.opts.(type) {
	case *T:
		return o
	case OptionSet:
		for _, m := range o {
			if t, ok := m.(*T); ok {
				return t
			}
		}
	}
	return nil
}
