// Package sdktest is the conformance suite every dplr estimator runs in its
// tests:
//
//	func TestConformance(t *testing.T) {
//		sdktest.Run(t, MyEstimator{}, sdktest.Case{Name: "small", Data: d, Params: map[string]string{"rank": "2"}, Grant: g})
//	}
//
// It checks that the catalogue is valid and derived from Info.Options;
// that an unknown, missing or out-of-range parameter is refused as a bad
// request before any privacy step is declared; that a seed reproduces a
// fit exactly; that every privacy step went through a release and every
// release was drawn; that every output carries a release class; that
// every step uses a mechanism the estimator declared before the fit (when
// its options implement sdk.Planner: the host withholds a result that
// breaks its declaration); that the result's guarantee is the one
// its steps compose to (privacy.Certify); and that an estimator that
// runs on remote data releases through aggregation passes exactly what it
// releases on the rows with the same seed. Check returns the findings instead of failing a test.
package sdktest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// Case is one request the suite runs.
type Case struct {
	Name   string
	Data   *data.Dataset
	Params map[string]string
	Grant  privacy.Grant
	// Seed is the random seed of the reproducibility runs (0 means 1).
	Seed uint64
	// Refuse, when set, says the request must be refused as a bad request
	// (the error containing Refuse) before any privacy step.
	Refuse string
}

// Run runs Check and reports each finding as a test error.
func Run(t *testing.T, est sdk.Estimator, cases ...Case) {
	t.Helper()
	for _, err := range Check(est, cases...) {
		t.Error(err)
	}
}

// Check runs the conformance checks on est with cases and returns what
// fails. The parameter checks use the first case that is not a refusal.
// It also flags a public output whose name says it is a duration
// (…_s, …_seconds, elapsed…): timings depend on the data.
func Check(est sdk.Estimator, cases ...Case) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	info, err := sdk.InfoOf(est)
	if err != nil {
		return []error{fmt.Errorf("catalogue: %w", err)}
	}
	if err := sdk.CheckSpecs(info.Params); err != nil {
		fail("catalogue: %v", err)
	}
	if info.Options == nil && len(est.Info().Params) > 0 {
		fail("catalogue of %s is hand-written: declare an options struct in Info.Options", info.Name)
	}
	if len(cases) == 0 {
		fail("no cases to run %s on", info.Name)
		return errs
	}
	var base *Case
	for i := range cases {
		c := &cases[i]
		if c.Refuse != "" {
			if err := checkRefused(est, *c, c.Refuse); err != nil {
				fail("case %q: %v", c.Name, err)
			}
			continue
		}
		if base == nil {
			base = c
		}
		for _, err := range checkCase(est, info, *c) {
			fail("case %q: %v", c.Name, err)
		}
	}
	if base == nil {
		fail("every case of %s is a refusal: give one that fits", info.Name)
		return errs
	}
	for _, bad := range badRequests(info, base.Params) {
		c := *base
		c.Params = bad.raw
		if err := checkRefused(est, c, ""); err != nil {
			fail("%s: %v", bad.what, err)
		}
	}
	return errs
}

func seedOf(c Case) uint64 {
	if c.Seed == 0 {
		return 1
	}
	return c.Seed
}

// outcome is one fit and everything the suite looks at.
type outcome struct {
	res      *sdk.Result
	acct     *privacy.Accountant
	declared int // steps announced through OnStep
	err      error
}

func fit(est sdk.Estimator, c Case) outcome {
	seed := seedOf(c)
	var mu sync.Mutex
	var o outcome
	opt := sdk.LocalOptions{Seed: &seed, OnStep: func(privacy.Step) { mu.Lock(); o.declared++; mu.Unlock() }}
	o.res, o.acct, o.err = sdk.RunLocal(context.Background(), est, c.Data, c.Params, c.Grant, opt)
	return o
}

// checkRefused runs c and requires a BadRequest (containing want when set)
// with no privacy step declared.
func checkRefused(est sdk.Estimator, c Case, want string) error {
	o := fit(est, c)
	switch {
	case o.err == nil:
		return fmt.Errorf("request %v was accepted; it must be refused", c.Params)
	case !sdk.IsBadRequest(o.err):
		return fmt.Errorf("request %v failed as an estimator error, not a bad request: %w", c.Params, o.err)
	case want != "" && !containsErr(o.err, want):
		return fmt.Errorf("refusal %q does not say %q", o.err, want)
	case o.declared > 0:
		return fmt.Errorf("request %v was refused after %d privacy steps were declared", c.Params, o.declared)
	}
	return nil
}

func containsErr(err error, s string) bool { return strings.Contains(err.Error(), s) }

// checkCase fits c twice with its seed and checks the result.
func checkCase(est sdk.Estimator, info sdk.Info, c Case) []error {
	first := fit(est, c)
	if first.err != nil {
		return []error{fmt.Errorf("fit failed: %w", first.err)}
	}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	res, acct := first.res, first.acct
	if err := res.CheckReleases(); err != nil {
		fail("outputs: %v", err)
	}
	if len(res.Matrices)+len(res.Scalars)+len(res.Series) == 0 {
		fail("the result has no output")
	}
	for _, name := range publicTimings(res) {
		fail("output %q looks like a timing but is labelled public: timings depend on the data; use AddTiming or sdk.Diagnostic", name)
	}
	if u := acct.Undrawn(); len(u) > 0 {
		fail("releases declared but never drawn: %v", u)
	}
	if w := acct.WithoutRelease(); len(w) > 0 {
		fail("steps declared without a release (Spend*): %v; declare them with Acct.Gaussian/Laplace/Exponential", w)
	}
	steps := acct.Steps()
	if first.declared != len(steps) {
		fail("%d steps announced to the host, %d recorded", first.declared, len(steps))
	}
	if err := checkDeclared(info, c, steps); err != nil {
		fail("mechanisms: %v", err)
	}
	if info.NonPrivate {
		if len(steps) > 0 || res.Guarantee.Kind != privacy.None {
			fail("non-private estimator declared %d steps and guarantee %q", len(steps), res.Guarantee.Kind)
		}
	} else if err := checkGuarantee(res.Guarantee, c.Grant, steps); err != nil {
		fail("guarantee: %v", err)
	}
	second := fit(est, c)
	if second.err != nil {
		fail("second fit with the same seed failed: %v", second.err)
	} else if err := sameFit(first, second, 0); err != nil {
		fail("the same seed did not reproduce the fit: %v", err)
	}
	if err := checkThroughPasses(est, c, first); err != nil {
		fail("through passes: %v", err)
	}
	return errs
}

// checkThroughPasses requires an estimator that runs on remote data
// (sdk.RemoteEstimator) to release, through aggregation passes over c's
// data run in process, exactly the fit on the data with the same seed.
// Options it refuses on remote data are skipped.
func checkThroughPasses(est sdk.Estimator, c Case, local outcome) error {
	if err := checkThrough(est, c, nil, 0, &local); err != nil && !errors.Is(err, ErrNeedsData) {
		return err
	}
	return nil
}

// ErrNeedsData is CheckThrough's answer for a request that cannot run on
// remote data: the estimator has no pass path, or refuses one of the
// request's options there as a bad request.
var ErrNeedsData = errors.New("the request needs the data itself")

// CheckThrough fits c on its in-memory data and on the same data reached
// only through aggregation passes served by p (nil: in process, by
// pass.Local), with c's seed, and reports how they differ: the privacy
// steps and the guarantee must be equal, the outputs equal to tol relative
// (|a − b| ≤ tol·max(1, |b|) for each value; 0: bit for bit). A pass
// runner that sums in another order (a Beam pipeline over shards) differs
// by rounding. ErrNeedsData when the request cannot run remotely.
func CheckThrough(est sdk.Estimator, c Case, p data.Passer, tol float64) error {
	return checkThrough(est, c, p, tol, nil)
}

func checkThrough(est sdk.Estimator, c Case, p data.Passer, tol float64, local *outcome) error {
	if _, ok := est.(sdk.RemoteEstimator); !ok || c.Data == nil || c.Data.X == nil {
		return ErrNeedsData
	}
	if local == nil {
		l := fit(est, c)
		if l.err != nil {
			return fmt.Errorf("fit on the data failed: %w", l.err)
		}
		local = &l
	}
	rc := c
	rc.Data = pass.RemoteOf(c.Data, p)
	remote := fit(est, rc)
	if sdk.IsBadRequest(remote.err) {
		return fmt.Errorf("%w: %w", ErrNeedsData, remote.err)
	}
	if remote.err != nil {
		return fmt.Errorf("fit through passes failed: %w", remote.err)
	}
	return sameFit(*local, remote, tol)
}

// checkDeclared holds a fit to its pre-flight declaration of mechanisms
// (the shares of its sdk.Planner): every step must use a declared mechanism, as
// the host requires before it releases a result. An undeclared estimator
// passes.
func checkDeclared(info sdk.Info, c Case, steps []privacy.Step) error {
	_, _, d, err := sdk.PrepareDeclared(info, c.Params, sdk.ShapeOf(c.Data), c.Grant)
	if err != nil {
		return fmt.Errorf("the pre-flight declaration failed for a request the fit accepted: %w", err)
	}
	return d.CheckSteps(steps)
}

// checkGuarantee requires the guarantee to be what its steps compose to.
func checkGuarantee(g privacy.Guarantee, grant privacy.Grant, steps []privacy.Step) error {
	if err := g.Validate(); err != nil {
		return err
	}
	if !g.Seeded {
		return errors.New("a seeded run's guarantee does not say it is seeded")
	}
	want, err := privacy.Certify(g, grant, steps)
	if err != nil {
		return err
	}
	if want.Kind != g.Kind || want.Epsilon != g.Epsilon || want.Delta != g.Delta || want.Rho != g.Rho {
		return fmt.Errorf("states %s (ε=%v, δ=%v, ρ=%v), but the steps compose to %s (ε=%v, δ=%v, ρ=%v)",
			g.Kind, g.Epsilon, g.Delta, g.Rho, want.Kind, want.Epsilon, want.Delta, want.Rho)
	}
	return nil
}

// sameFit compares two fits: steps and guarantees exactly, values to tol
// relative (0: bit for bit).
func sameFit(a, b outcome, tol float64) error {
	same := func(x, y float64) bool {
		return math.Float64bits(x) == math.Float64bits(y) || tol > 0 && math.Abs(x-y) <= tol*math.Max(1, math.Abs(y))
	}
	if !reflect.DeepEqual(a.acct.Steps(), b.acct.Steps()) {
		return errors.New("different privacy steps")
	}
	ra, rb := a.res, b.res
	if len(ra.Matrices) != len(rb.Matrices) || len(ra.Scalars) != len(rb.Scalars) || len(ra.Series) != len(rb.Series) {
		return errors.New("different outputs")
	}
	for i, m := range ra.Matrices {
		n := rb.Matrices[i]
		if m.Name != n.Name || m.Release != n.Release || m.M == nil || n.M == nil {
			return fmt.Errorf("matrix %q differs", m.Name)
		}
		r, c := m.M.Dims()
		if r2, c2 := n.M.Dims(); r != r2 || c != c2 {
			return fmt.Errorf("matrix %q: %d×%d vs %d×%d", m.Name, r, c, r2, c2)
		}
		for i := 0; i < r; i++ {
			for j := 0; j < c; j++ {
				if !same(m.M.At(i, j), n.M.At(i, j)) {
					return fmt.Errorf("matrix %q differs at (%d, %d): %v vs %v", m.Name, i, j, m.M.At(i, j), n.M.At(i, j))
				}
			}
		}
	}
	for i, s := range ra.Scalars {
		if n := rb.Scalars[i]; s.Name != n.Name || !same(s.Value, n.Value) {
			return fmt.Errorf("scalar %q: %v vs %v", s.Name, s.Value, n.Value)
		}
	}
	for i, s := range ra.Series {
		n := rb.Series[i]
		if s.Name != n.Name || len(s.Values) != len(n.Values) {
			return fmt.Errorf("series %q differs", s.Name)
		}
		for j := range s.Values {
			if !same(s.Values[j], n.Values[j]) {
				return fmt.Errorf("series %q differs at %d", s.Name, j)
			}
		}
	}
	if !reflect.DeepEqual(ra.Guarantee, rb.Guarantee) {
		return errors.New("different guarantees")
	}
	return nil
}

// badRequest is a request the catalogue must refuse.
type badRequest struct {
	what string
	raw  map[string]string
}

// badRequests derives, from the catalogue, requests that differ from base
// in one parameter: an unknown name, each required parameter missing, and
// for each parameter a value of the wrong type or outside its range or
// choices.
func badRequests(info sdk.Info, base map[string]string) []badRequest {
	with := func(k, v string) map[string]string {
		out := map[string]string{k: v}
		for bk, bv := range base {
			if bk != k {
				out[bk] = bv
			}
		}
		return out
	}
	out := []badRequest{{"an unknown parameter", with("sdktest_no_such_parameter", "1")}}
	for _, s := range info.Params {
		if s.Required {
			without := with(s.Name, "")
			delete(without, s.Name)
			out = append(out, badRequest{fmt.Sprintf("required %s missing", s.Name), without})
		}
		for _, v := range badValues(s) {
			out = append(out, badRequest{fmt.Sprintf("%s=%s", s.Name, v), with(s.Name, v)})
		}
	}
	return out
}

func badValues(s sdk.ParamSpec) []string {
	num := func(x float64) (string, bool) {
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return "", false
		}
		if s.Type == sdk.Int {
			if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
				return "", false
			}
			return strconv.FormatInt(int64(x), 10), true
		}
		return strconv.FormatFloat(x, 'g', -1, 64), true
	}
	var out []string
	add := func(x float64) {
		if v, ok := num(x); ok {
			out = append(out, v)
		}
	}
	switch s.Type {
	case sdk.Bool:
		return []string{"maybe"}
	case sdk.String:
		if len(s.Choices) > 0 {
			return []string{"sdktest-not-a-choice"}
		}
		return nil
	case sdk.Int:
		out = append(out, "1.5")
	case sdk.Float:
		out = append(out, "not-a-number")
	}
	if s.Min != nil {
		add(math.Min(*s.Min-1, *s.Min*2))
	}
	if s.Max != nil {
		add(math.Max(*s.Max+1, *s.Max*2))
	}
	if g := s.ExclusiveMin; g != nil {
		if s.Type == sdk.Int {
			add(math.Floor(*g))
		} else {
			add(*g)
		}
	}
	if l := s.ExclusiveMax; l != nil {
		if s.Type == sdk.Int {
			add(math.Ceil(*l))
		} else {
			add(*l)
		}
	}
	return out
}

// publicTimings lists public scalars and series whose names say they are
// durations.
func publicTimings(res *sdk.Result) []string {
	looks := func(name string) bool {
		n := strings.ToLower(name)
		for _, suf := range []string{"_s", "_ms", "_seconds", "_sec"} {
			if strings.HasSuffix(n, suf) {
				return true
			}
		}
		return strings.Contains(n, "elapsed") || strings.Contains(n, "wall_time") || strings.Contains(n, "cpu_time")
	}
	var out []string
	for _, sc := range res.Scalars {
		if sc.Release == sdk.Public && looks(sc.Name) {
			out = append(out, sc.Name)
		}
	}
	for _, se := range res.Series {
		if se.Release == sdk.Public && looks(se.Name) {
			out = append(out, se.Name)
		}
	}
	return out
}

// RunDeclared fits each case once and reports, as test errors, a case
// whose steps use a mechanism the estimator did not declare or whose
// declaration lists a mechanism the fit did not use. The host allows the
// latter (a declaration may list what a fit only might use), but a listed,
// unused non-Gaussian mechanism makes the host refuse the request under
// the Gaussian-DP filter for nothing: estimators whose plans are fixed by
// their options should declare exactly.
func RunDeclared(t *testing.T, est sdk.Estimator, cases ...Case) {
	t.Helper()
	for _, err := range CheckDeclaredExactly(est, cases...) {
		t.Error(err)
	}
}

// CheckDeclaredExactly is RunDeclared returning its findings.
func CheckDeclaredExactly(est sdk.Estimator, cases ...Case) []error {
	info, err := sdk.InfoOf(est)
	if err != nil {
		return []error{fmt.Errorf("catalogue: %w", err)}
	}
	var errs []error
	for _, c := range cases {
		_, _, d, err := sdk.PrepareDeclared(info, c.Params, sdk.ShapeOf(c.Data), c.Grant)
		if err != nil {
			errs = append(errs, fmt.Errorf("case %q: pre-flight: %w", c.Name, err))
			continue
		}
		if !d.Declared {
			errs = append(errs, fmt.Errorf("case %q: %s declares no mechanisms (implement sdk.Planner on its options)", c.Name, info.Name))
			continue
		}
		o := fit(est, c)
		if o.err != nil {
			errs = append(errs, fmt.Errorf("case %q: fit failed: %w", c.Name, o.err))
			continue
		}
		steps := o.acct.Steps()
		if err := d.CheckSteps(steps); err != nil {
			errs = append(errs, fmt.Errorf("case %q: %w", c.Name, err))
		}
		for _, m := range d.Mechanisms() {
			used := false
			for _, s := range steps {
				used = used || s.Mechanism == m
			}
			if !used {
				errs = append(errs, fmt.Errorf("case %q: declares the %s mechanism (%s), which the fit did not use", c.Name, m, d))
			}
		}
	}
	return errs
}
