// Package pass defines the aggregation passes an estimator may ask for when
// it cannot read the data itself: the data set lives in shards that a Beam
// pipeline reads (dplr fit --engine beam), and the estimator reaches it
// only through a data.Passer the host hands it.
//
// A pass kind (Kind) fixes, in public terms, what one pass computes: its
// parameters (clip bounds), its side inputs (the current iterate, as a
// Beam side input), its outputs (sums of per-record or per-user terms,
// each bounded before aggregation) and the bounds those outputs must
// satisfy. Three parties use the same Spec:
//
//   - an estimator, which builds requests and reads results;
//   - the host, which validates every request before running it and every
//     result before the estimator sees it (Validate, CheckResult);
//   - a pipeline (beam/stats), which must compute exactly what Local
//     computes, the reference implementation over an in-memory data set.
//
// Results are sums, not private releases: the estimator adds the noise,
// and its privacy steps are declared, verified and charged as in a fit on
// local data. What a pass kind cannot guarantee by itself is that each
// record was bounded before the sum; the host checks what aggregates
// allow (norms within Records·bound) and trusts the pipeline for the rest,
// as docs/beam.md says.
package pass

import (
	"context"
	"fmt"
	"reflect"
	"sort"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
)

// ArraySpec is the expected shape of an input or output.
type ArraySpec struct {
	Name       string
	Rows, Cols int
	Doc        string
}

// Kind is one pass kind over its typed request Q and result R (structs
// whose tagged fields travel, see the codec): declared once, it encodes and
// decodes both, checks them, and runs the reference implementation.
type Kind[Q, R any] struct {
	// Name is the kind's wire name, "<data kind>.<what>" (e.g.
	// "trace.gradient").
	Name string
	// Data is the data kind the pass reads.
	Data data.Kind
	// Doc says what the pass computes, in words and formulas.
	Doc string
	// Inputs lists the side inputs of q (fields of Q) in wire order with
	// their shapes for a data set of shape sh (nil: none).
	Inputs func(sh *data.Remote, q *Q) []ArraySpec
	// Outputs lists the outputs of a result of q (fields of R) likewise.
	Outputs func(sh *data.Remote, q *Q) []ArraySpec
	// Check, when set, checks the parameters' ranges and the inputs'
	// values beyond their shapes.
	Check func(sh *data.Remote, q *Q) error
	// CheckResult, when set, checks the bounds a result must satisfy
	// (norms within Records times the per-record bound).
	CheckResult func(sh *data.Remote, q *Q, r *R) error
	// Local is the reference implementation over an in-memory data set of
	// kind Data (X set).
	Local func(ctx context.Context, ds *data.Dataset, q *Q) (*R, error)
}

// EncodeRequest returns the wire request of q for a data set of shape sh
// (a nil input travels as zeros of its shape).
func (k *Kind[Q, R]) EncodeRequest(sh *data.Remote, q Q) data.PassRequest {
	v := reflect.ValueOf(q)
	c := codecOf(v.Type())
	req := data.PassRequest{Kind: k.Name, Params: c.scalarsOf(v)}
	if k.Inputs != nil {
		req.Inputs = c.arraysOf(v, k.Inputs(sh, &q))
	}
	return req
}

// DecodeRequest reads and validates a wire request of this kind for a
// data set of shape sh: every parameter present, finite and of its type
// (and no other), every input of its shape and finite, and the kind's
// Check. The result shares the request's arrays.
func (k *Kind[Q, R]) DecodeRequest(sh *data.Remote, req data.PassRequest) (*Q, error) {
	q := new(Q)
	v := reflect.ValueOf(q).Elem()
	c := codecOf(v.Type())
	err := c.setScalars("parameter", v, req.Params)
	if req.Kind != k.Name {
		err = fmt.Errorf("a %q request", req.Kind)
	}
	if err == nil {
		err = c.setArrays("input", v, req.Inputs)
	}
	if err == nil {
		var want []ArraySpec
		if k.Inputs != nil {
			want = k.Inputs(sh, q)
		}
		err = checkArrays("input", want, req.Inputs)
	}
	if err == nil && k.Check != nil {
		err = k.Check(sh, q)
	}
	if err != nil {
		return nil, fmt.Errorf("pass %s: %w", k.Name, err)
	}
	return q, nil
}

// EncodeResult returns the wire result r of the request q.
func (k *Kind[Q, R]) EncodeResult(sh *data.Remote, q *Q, r *R) *data.PassResult {
	v := reflect.ValueOf(r).Elem()
	c := codecOf(v.Type())
	return &data.PassResult{Records: v.FieldByIndex(c.records).Int(), Scalars: c.scalarsOf(v), Outputs: c.arraysOf(v, k.Outputs(sh, q))}
}

// DecodeResult reads and checks a wire result of the request q: the record
// count (every record, or user, of the data set), every output present
// with its shape and finite values, every scalar present, finite and of
// its type, and the kind's bounds.
func (k *Kind[Q, R]) DecodeResult(sh *data.Remote, q *Q, res *data.PassResult) (*R, error) {
	if res == nil {
		return nil, fmt.Errorf("pass %s: no result", k.Name)
	}
	want := int64(sh.N)
	if k.Data == data.Users {
		want = int64(sh.Users)
	}
	if res.Records != want {
		return nil, fmt.Errorf("pass %s: the result aggregates %d records, want %d", k.Name, res.Records, want)
	}
	r := new(R)
	v := reflect.ValueOf(r).Elem()
	c := codecOf(v.Type())
	v.FieldByIndex(c.records).SetInt(res.Records)
	err := c.setScalars("scalar", v, res.Scalars)
	if err == nil {
		err = c.setArrays("output", v, res.Outputs)
	}
	if err == nil {
		err = checkArrays("output", k.Outputs(sh, q), res.Outputs)
	}
	if err == nil && k.CheckResult != nil {
		err = k.CheckResult(sh, q, r)
	}
	if err != nil {
		return nil, fmt.Errorf("pass %s: %w", k.Name, err)
	}
	return r, nil
}

// Run runs the pass q over ds (pass.Run: in process when ds holds its
// rows, otherwise by its Passer; the request validated and the result
// checked either way) and returns the typed result.
func (k *Kind[Q, R]) Run(ctx context.Context, ds *data.Dataset, q Q) (*R, error) {
	if ds == nil {
		return nil, fmt.Errorf("pass %s: no data set", k.Name)
	}
	sh := ShapeOf(ds)
	res, err := Run(ctx, ds, k.EncodeRequest(sh, q))
	if err != nil {
		return nil, err
	}
	return k.DecodeResult(sh, &q, res)
}

// Spec is a registered kind on the wire, what the host and the pipelines
// see of it.
type Spec struct {
	// Kind is the pass's wire name.
	Kind string
	// Data is the data kind the pass reads.
	Data data.Kind
	// Doc says what the pass computes.
	Doc string

	decode  func(sh *data.Remote, req data.PassRequest) (any, error)
	check   func(sh *data.Remote, q any, res *data.PassResult) error
	outputs func(sh *data.Remote, q any) []ArraySpec
	local   func(ctx context.Context, ds *data.Dataset, q any) (*data.PassResult, error)
}

// Outputs lists the outputs of a result of req (none when req is not a
// valid request of this kind).
func (s Spec) Outputs(sh *data.Remote, req data.PassRequest) []ArraySpec {
	q, err := s.decode(sh, req)
	if err != nil {
		return nil
	}
	return s.outputs(sh, q)
}

// Local validates req and runs the kind's reference implementation over
// the in-memory data set ds; the result is not checked.
func (s Spec) Local(ctx context.Context, ds *data.Dataset, req data.PassRequest) (*data.PassResult, error) {
	q, err := s.decode(ShapeOf(ds), req)
	if err != nil {
		return nil, err
	}
	return s.local(ctx, ds, q)
}

var specs = map[string]Spec{}

// register adds the kind k and returns it; the kinds are package variables
// of this package's files, one file per data kind.
func register[Q, R any](k *Kind[Q, R]) *Kind[Q, R] {
	if _, dup := specs[k.Name]; dup || k.Name == "" || k.Local == nil || k.Outputs == nil {
		panic("pass: bad or duplicate kind " + k.Name)
	}
	codecOf(reflect.TypeFor[Q]())
	if codecOf(reflect.TypeFor[R]()).records == nil {
		panic("pass: result of " + k.Name + " without Records")
	}
	specs[k.Name] = Spec{Kind: k.Name, Data: k.Data, Doc: k.Doc,
		decode: func(sh *data.Remote, req data.PassRequest) (any, error) { return k.DecodeRequest(sh, req) },
		check: func(sh *data.Remote, q any, res *data.PassResult) error {
			_, err := k.DecodeResult(sh, q.(*Q), res)
			return err
		},
		outputs: func(sh *data.Remote, q any) []ArraySpec { return k.Outputs(sh, q.(*Q)) },
		local: func(ctx context.Context, ds *data.Dataset, q any) (*data.PassResult, error) {
			r, err := k.Local(ctx, ds, q.(*Q))
			if err != nil {
				return nil, err
			}
			return k.EncodeResult(ShapeOf(ds), q.(*Q), r), nil
		}}
	return k
}

// Lookup returns the kind called name.
func Lookup(name string) (Spec, bool) {
	s, ok := specs[name]
	return s, ok
}

// Kinds lists the registered kinds, sorted.
func Kinds() []string {
	out := make([]string, 0, len(specs))
	for k := range specs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ShapeOf returns the public shape of an in-memory data set as a Remote
// without a Passer (for validation).
func ShapeOf(ds *data.Dataset) *data.Remote {
	if ds.Remote != nil {
		return ds.Remote
	}
	return &data.Remote{N: ds.N(), P: ds.P(), D1: ds.D1, D2: ds.D2, Users: ds.NumUsers()}
}

// Validate checks a request against its kind for a data set of kind k and
// shape sh: the kind exists and reads k, and the request decodes
// (Kind.DecodeRequest).
func Validate(k data.Kind, sh *data.Remote, req data.PassRequest) (Spec, error) {
	s, _, err := validate(k, sh, req)
	return s, err
}

// validate is Validate, returning the decoded request too.
func validate(k data.Kind, sh *data.Remote, req data.PassRequest) (Spec, any, error) {
	s, ok := specs[req.Kind]
	if !ok {
		return s, nil, fmt.Errorf("pass %q: unknown kind (known: %v)", req.Kind, Kinds())
	}
	if s.Data != k {
		return s, nil, fmt.Errorf("pass %s reads %s data, the data set holds %s data", s.Kind, s.Data, k)
	}
	q, err := s.decode(sh, req)
	return s, q, err
}

// CheckResult checks a result against the request's kind
// (Kind.DecodeResult).
func CheckResult(s Spec, sh *data.Remote, req data.PassRequest, res *data.PassResult) error {
	q, err := s.decode(sh, req)
	if err != nil {
		return err
	}
	return s.check(sh, q, res)
}

// local runs passes over an in-memory data set.
type local struct{ ds *data.Dataset }

// Local returns a Passer that runs every pass over the in-memory data set
// ds with the kinds' reference implementations, validating requests and
// results as the host does. Tests use it to check that an estimator's
// path through passes releases what its path over the rows releases.
func Local(ds *data.Dataset) data.Passer { return local{ds} }

// Pass implements data.Passer.
func (l local) Pass(ctx context.Context, req data.PassRequest) (*data.PassResult, error) {
	sh := ShapeOf(l.ds)
	s, q, err := validate(l.ds.Kind, sh, req)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	res, err := s.local(ctx, l.ds, q)
	if err != nil {
		return nil, fmt.Errorf("pass %s: %w", s.Kind, err)
	}
	if err := s.check(sh, q, res); err != nil {
		return nil, err
	}
	return res, nil
}

// Run runs one pass over ds: in process (Local) when ds holds its rows,
// otherwise by its Passer; the request is validated and the result checked
// as the host does either way.
func Run(ctx context.Context, ds *data.Dataset, req data.PassRequest) (*data.PassResult, error) {
	if ds == nil {
		return nil, fmt.Errorf("pass %s: no data set", req.Kind)
	}
	if ds.X != nil && !ds.X.IsEmpty() || ds.XBytes != nil {
		return Local(ds).Pass(ctx, req)
	}
	if ds.Remote == nil || ds.Remote.Passer == nil {
		return nil, fmt.Errorf("pass %s: the data set holds no rows and no pass runner", req.Kind)
	}
	s, err := Validate(ds.Kind, ds.Remote, req)
	if err != nil {
		return nil, err
	}
	res, err := ds.Remote.Passer.Pass(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("pass %s: %w", req.Kind, err)
	}
	if err := CheckResult(s, ds.Remote, req, res); err != nil {
		return nil, err
	}
	return res, nil
}

// RemoteOf returns a copy of ds that holds no rows and reaches them only
// through passes run by p (Local(ds) when p is nil): what an estimator
// sees on the Beam path, for tests.
func RemoteOf(ds *data.Dataset, p data.Passer) *data.Dataset {
	if p == nil {
		p = Local(ds)
	}
	sh := *ShapeOf(ds)
	sh.Passer = p
	return &data.Dataset{Kind: ds.Kind, D1: ds.D1, D2: ds.D2, Hash: ds.Hash, Name: ds.Name, Remote: &sh}
}

// symOf returns the p×p row-major v as a symmetric matrix, or nil when it
// is not exactly symmetric.
func symOf(p int, v []float64) *mat.SymDense {
	for i := 0; i < p; i++ {
		for j := i + 1; j < p; j++ {
			if v[i*p+j] != v[j*p+i] {
				return nil
			}
		}
	}
	return mat.NewSymDense(p, append([]float64(nil), v...))
}
