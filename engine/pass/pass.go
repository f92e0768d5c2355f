// Package pass defines the aggregation passes an estimator may ask for when
// it cannot read the data itself: the data set lives in shards that a Beam
// pipeline reads (dplr fit --engine beam), and the estimator reaches it
// only through a data.Passer the host hands it.
//
// A pass kind (Spec) fixes, in public terms, what one pass computes: its
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
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/kernel"
)

// ArraySpec is the expected shape of an input or output.
type ArraySpec struct {
	Name       string
	Rows, Cols int
	Doc        string
}

// Spec is one pass kind.
type Spec struct {
	// Kind is the pass's name, "<data kind>.<what>" (e.g. "trace.gradient").
	Kind string
	// Data is the data kind the pass reads.
	Data data.Kind
	// Doc says what the pass computes, in words and formulas.
	Doc string
	// Params are the names of the required scalar parameters; each must be
	// a finite number, and Check may restrict it further.
	Params []string
	// Inputs returns the side inputs a request must carry for a data set of
	// shape sh and the given parameters.
	Inputs func(sh *data.Remote, params map[string]float64) []ArraySpec
	// Outputs returns the outputs a result must carry.
	Outputs func(sh *data.Remote, req data.PassRequest) []ArraySpec
	// Scalars are the names of the scalars a result carries (all of them,
	// finite).
	Scalars []string
	// CheckRequest, when set, checks the parameters' ranges and the inputs'
	// values beyond their shapes.
	CheckRequest func(sh *data.Remote, req data.PassRequest) error
	// CheckResult, when set, checks the bounds the outputs must satisfy
	// (norms within Records times the per-record bound).
	CheckResult func(sh *data.Remote, req data.PassRequest, res *data.PassResult) error
	// Records returns the number of records a result must report (-1: any
	// number in [0, sh.N]).
	Records func(sh *data.Remote) int64
	// Local is the reference implementation over an in-memory data set of
	// kind Data (X set).
	Local func(ctx context.Context, ds *data.Dataset, req data.PassRequest) (*data.PassResult, error)
}

var specs = map[string]Spec{}

// register adds a kind; it is called from the init functions of this
// package's files, one per data kind.
func register(s Spec) {
	if _, dup := specs[s.Kind]; dup || s.Kind == "" || s.Local == nil || s.Outputs == nil {
		panic("pass: bad or duplicate kind " + s.Kind)
	}
	specs[s.Kind] = s
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
// shape sh: the kind exists and reads k, every parameter is present and
// finite (and no unknown one is given), every input has the right shape
// and finite values, and the kind's own checks pass.
func Validate(k data.Kind, sh *data.Remote, req data.PassRequest) (Spec, error) {
	s, ok := specs[req.Kind]
	if !ok {
		return s, fmt.Errorf("pass %q: unknown kind (known: %v)", req.Kind, Kinds())
	}
	if s.Data != k {
		return s, fmt.Errorf("pass %s reads %s data, the data set holds %s data", s.Kind, s.Data, k)
	}
	for name, v := range req.Params {
		if !slices.Contains(s.Params, name) {
			return s, fmt.Errorf("pass %s: unknown parameter %q", s.Kind, name)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return s, fmt.Errorf("pass %s: parameter %s = %v is not finite", s.Kind, name, v)
		}
	}
	for _, name := range s.Params {
		if _, ok := req.Params[name]; !ok {
			return s, fmt.Errorf("pass %s: parameter %s missing", s.Kind, name)
		}
	}
	var want []ArraySpec
	if s.Inputs != nil {
		want = s.Inputs(sh, req.Params)
	}
	if err := checkArrays("input", s.Kind, want, req.Inputs); err != nil {
		return s, err
	}
	if s.CheckRequest != nil {
		if err := s.CheckRequest(sh, req); err != nil {
			return s, fmt.Errorf("pass %s: %w", s.Kind, err)
		}
	}
	return s, nil
}

// CheckResult checks a result against the request's kind: the record
// count, every output present with its shape and finite values, every
// scalar present and finite, and the kind's bounds.
func CheckResult(s Spec, sh *data.Remote, req data.PassRequest, res *data.PassResult) error {
	if res == nil {
		return fmt.Errorf("pass %s: no result", s.Kind)
	}
	if s.Records != nil {
		if want := s.Records(sh); want >= 0 && res.Records != want {
			return fmt.Errorf("pass %s: the result aggregates %d records, want %d", s.Kind, res.Records, want)
		}
	}
	if res.Records < 0 || res.Records > int64(sh.N) {
		return fmt.Errorf("pass %s: the result aggregates %d records of %d", s.Kind, res.Records, sh.N)
	}
	if err := checkArrays("output", s.Kind, s.Outputs(sh, req), res.Outputs); err != nil {
		return err
	}
	if len(res.Scalars) != len(s.Scalars) {
		return fmt.Errorf("pass %s: %d scalars, want %v", s.Kind, len(res.Scalars), s.Scalars)
	}
	for _, name := range s.Scalars {
		v, ok := res.Scalars[name]
		if !ok {
			return fmt.Errorf("pass %s: scalar %s missing", s.Kind, name)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("pass %s: scalar %s = %v is not finite", s.Kind, name, v)
		}
	}
	if s.CheckResult != nil {
		if err := s.CheckResult(sh, req, res); err != nil {
			return fmt.Errorf("pass %s: %w", s.Kind, err)
		}
	}
	return nil
}

// checkArrays checks that got holds exactly the arrays want lists, in
// order, each finite.
func checkArrays(what, kind string, want []ArraySpec, got []data.Array) error {
	if len(got) != len(want) {
		names := make([]string, len(want))
		for i, w := range want {
			names[i] = w.Name
		}
		return fmt.Errorf("pass %s: %d %ss, want %v", kind, len(got), what, names)
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.Name {
			return fmt.Errorf("pass %s: %s %d is %q, want %q", kind, what, i, g.Name, w.Name)
		}
		if g.Rows != w.Rows || g.Cols != w.Cols {
			return fmt.Errorf("pass %s: %s %s is %d×%d, want %d×%d", kind, what, w.Name, g.Rows, g.Cols, w.Rows, w.Cols)
		}
		if err := g.Check(); err != nil {
			return fmt.Errorf("pass %s: %s: %w", kind, what, err)
		}
	}
	return nil
}

// Norm returns the Euclidean (Frobenius) norm of v (kernel.Norm).
func Norm(v []float64) float64 { return kernel.Norm(v) }

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
	s, err := Validate(l.ds.Kind, sh, req)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res, err := s.Local(ctx, l.ds, req)
	if err != nil {
		return nil, fmt.Errorf("pass %s: %w", s.Kind, err)
	}
	if err := CheckResult(s, sh, req, res); err != nil {
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
	if ds.X != nil && !ds.X.IsEmpty() {
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
