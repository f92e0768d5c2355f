package sdk

import (
	"fmt"
	"reflect"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
)

// Shape is the public shape of a data set: what an options Check hook and
// a Footprint may look at before any budget is touched. It holds no value
// computed from the data's contents.
type Shape struct {
	Kind  data.Kind
	N     int // rows
	P     int // columns of X
	D1    int // trace data: rows of each sample matrix
	D2    int // trace data: columns of each sample matrix
	Users int // users data: number of users
	// Remote: a data set held elsewhere and reached only through
	// aggregation passes (data.Remote).
	Remote bool
	// ColumnScaled: the host divided every column by a public per-column
	// scale (data.Dataset.ColumnScaled), as for a table in its own units.
	ColumnScaled bool
}

// ShapeOf returns the shape of d.
func ShapeOf(d *data.Dataset) Shape {
	if d == nil || (d.X == nil && d.XBytes == nil && d.Remote == nil) {
		return Shape{}
	}
	s := Shape{Kind: d.Kind, N: d.N(), P: d.P(), D1: d.D1, D2: d.D2, Remote: d.Remote != nil, ColumnScaled: d.ColumnScaled}
	if d.Kind == data.Users {
		s.Users = d.NumUsers()
	}
	return s
}

// Checker is implemented by an options type that checks its values against
// each other and against the data's public shape. Prepare calls it after
// binding, on the bound value, so it may also normalise it (fill an
// optional value's default from another, map a deprecated alias onto its
// replacement); an error refuses the request (a BadRequest) before any
// budget is reserved or spent.
type Checker interface {
	Check(s Shape) error
}

// Footprinter is implemented by an options type that can estimate the peak
// memory, in bytes, of a fit on data of shape s.
type Footprinter interface {
	Footprint(s Shape) int64
}

// InfoOf returns est's catalogue entry with its parameters resolved: derived
// from Info.Options when set (an estimator may not set both Options and
// Params), plus the SDK's own parameters (allow_large_delta for an
// estimator that accepts an (ε, δ) budget). The plugin server
// (transport.Serve), RunLocal and Prepare all use it.
func InfoOf(est Estimator) (Info, error) {
	info, err := resolveInfo(est.Info())
	if _, ok := est.(RemoteEstimator); ok && err == nil {
		info.Remote = true
	}
	return info, err
}

func resolveInfo(info Info) (Info, error) {
	if info.Options != nil {
		specs, err := SpecsOf(info.Options)
		if err != nil {
			return Info{}, fmt.Errorf("estimator %s: %w", info.Name, err)
		}
		given := info.Params
		info.Params = specs
		info.Params = withBuiltins(info)
		// An Info resolved already (by InfoOf) passes unchanged.
		if len(given) > 0 && !reflect.DeepEqual(given, info.Params) {
			return Info{}, fmt.Errorf("estimator %s sets both Options and Params: derive the catalogue from one", info.Name)
		}
	} else {
		info.Params = withBuiltins(info)
	}
	if err := CheckSpecs(info.Params); err != nil {
		return Info{}, fmt.Errorf("estimator %s: %w", info.Name, err)
	}
	return info, nil
}

// withBuiltins appends the SDK's own parameters the estimator does not
// declare itself.
func withBuiltins(info Info) []ParamSpec {
	out := append([]ParamSpec(nil), info.Params...)
	if !info.NonPrivate && grantAccepted(info.Grants, privacy.GrantApprox) && !hasParam(out, ParamAllowLargeDelta) {
		out = append(out, allowLargeDeltaSpec)
	}
	return out
}

func hasParam(specs []ParamSpec, name string) bool {
	for _, s := range specs {
		if s.Name == name {
			return true
		}
	}
	return false
}

// prepared is a validated, bound request.
type prepared struct {
	info      Info
	params    Params
	opts      any
	footprint int64
}

// Prepare validates the request raw against the estimator's catalogue
// (info, with Options or Params), binds it into a fresh options value
// (a pointer to the Options type, an OptionSet of pointers for an
// OptionSet; nil for an estimator without Options),
// runs the options' Check hook on the public shape s and estimates the
// fit's peak memory with the optional Footprint hook (0 when absent). Every
// error is a BadRequest: nothing has been spent. RunLocal and the plugin
// server go through it before Fit; a host calls it (over the protocol)
// before reserving any budget.
func Prepare(info Info, raw map[string]string, s Shape) (opts any, footprint int64, err error) {
	p, err := prepare(info, raw, s)
	if err != nil {
		return nil, 0, err
	}
	return p.opts, p.footprint, nil
}

func prepare(info Info, raw map[string]string, s Shape) (*prepared, error) {
	info, err := resolveInfo(info)
	if err != nil {
		return nil, err
	}
	if s.Kind != "" && s.Kind != info.DataKind {
		return nil, BadRequest("estimator %s takes %s data, got %s data", info.Name, info.DataKind, s.Kind)
	}
	params, err := ValidateParams(info.Params, raw)
	if err != nil {
		return nil, BadRequest("estimator %s: %w", info.Name, err)
	}
	p := &prepared{info: info, params: params}
	if info.Options == nil {
		return p, nil
	}
	var bound OptionSet
	for _, proto := range protos(info.Options) {
		o, fp, err := bindOne(info.Name, proto, params, s)
		if err != nil {
			return nil, err
		}
		bound = append(bound, o)
		p.footprint += fp
	}
	if len(bound) == 1 {
		p.opts = bound[0]
	} else {
		p.opts = bound
	}
	extra, err := expandSelection(info, raw, s, p.opts, p.footprint)
	if err != nil {
		return nil, err
	}
	p.footprint += extra
	return p, nil
}

// bindOne binds one options prototype and runs its hooks.
func bindOne(name string, proto any, params Params, s Shape) (opts any, footprint int64, err error) {
	fields, err := fieldsOf(proto)
	if err != nil {
		return nil, 0, fmt.Errorf("estimator %s: %w", name, err)
	}
	if opts, err = bindOptions(proto, fields, params); err != nil {
		return nil, 0, BadRequest("estimator %s: %w", name, err)
	}
	if c, ok := opts.(Checker); ok {
		if err := safeHook(func() error { return c.Check(s) }); err != nil {
			return nil, 0, BadRequest("estimator %s: %w", name, err)
		}
	}
	if f, ok := opts.(Footprinter); ok {
		if err := safeHook(func() error { footprint = f.Footprint(s); return nil }); err != nil {
			return nil, 0, fmt.Errorf("estimator %s: footprint: %w", name, err)
		}
	}
	return opts, footprint, nil
}

// safeHook runs an options hook, turning a panic into an error so that none
// crosses the SDK boundary.
func safeHook(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("options hook panicked: %v", r)
		}
	}()
	return f()
}
