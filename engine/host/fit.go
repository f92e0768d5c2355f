package host

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/engine/transport"
)

// Call is one request to a plugin's estimator, in SDK types.
type Call struct {
	Estimator string
	Params    map[string]string
	Grant     privacy.Grant
	Data      dataio.Handle
	// Seed, when set, makes the noise reproducible (and not private
	// against whoever knows it).
	Seed *uint64
	// Remote, when set, is a data set held elsewhere: Data then gives only
	// its kind, hash (source identity) and name, Remote its public shape
	// and the Passer that runs the aggregation passes the plugin requests
	// (the fit goes over FitPasses).
	Remote *data.Remote
	// Passes are the pass kinds the plugin may request (those its Check
	// declared); MaxPasses caps their number (0: sdk.MaxPasses).
	Passes    []string
	MaxPasses int
	// ReplyTimeout bounds the delivery of each pass's reply to the plugin
	// (0: DefaultPassReplyTimeout).
	ReplyTimeout time.Duration
	// pending is the fit's process, started ahead (Plugin.StartFit).
	pending *FitProcess
}

func (c Call) fitRequest() transport.FitRequest {
	return transport.FitRequest{Estimator: c.Estimator, Params: c.Params, Grant: c.Grant, Data: c.Data, Remote: c.Remote, Seed: c.Seed}
}

// Events receives what a plugin reports while it fits. Every field may be
// nil.
type Events struct {
	Progress func(sdk.Progress)
	Log      func(string)
	// Step sees each privacy step as the plugin announces it, before the
	// plugin draws its noise.
	Step func(privacy.Step)
	// Warning sees, before anything is reserved, the warning the plan
	// gives when it expects a result near random (one line).
	Warning func(string)
	// Pass sees each aggregation pass the plugin requests on remote data
	// (numbered from 1), once the host has validated it and before it runs.
	Pass func(n int, req data.PassRequest)
}

// Matrix is a matrix output received from a plugin, row-major.
type Matrix struct {
	Name       string
	Rows, Cols int
	Data       []float64
	Release    sdk.Release
	Doc        string
}

// FitOutcome is what a plugin returned for one fit, validated.
type FitOutcome struct {
	Matrices []Matrix
	Scalars  []sdk.Scalar
	Series   []sdk.Series
	// Guarantee is the guarantee as the plugin stated it; its numbers are
	// replaced by the host's composition of Steps (see Runner).
	Guarantee privacy.Guarantee
	Notes     []string
	// Warnings are the plugin's notes that change the conclusion
	// (sdk.Result.Warnings).
	Warnings []string
	// Announced are the privacy steps the plugin announced while running
	// (before drawing their noise). They are known even when the fit fails.
	Announced []privacy.Step
	// Listed are the steps the plugin's result lists (nil without a result).
	Listed []privacy.Step
	// Steps is the one verified list the host charges: set only when the
	// announced and listed steps agree and each verifies.
	Steps []privacy.Step
	// Achieved is the host's own composition of Steps under the grant.
	Achieved privacy.Achieved
	// Certified is the guarantee the verified steps give under the grant
	// (privacy.Certify of the plugin's statement): the estimator's kind,
	// model, assumptions and neighbours with the host's figures.
	Certified privacy.Guarantee
	// Passes is the number of aggregation passes the host ran for a fit
	// on remote data, PassSeconds the wall time they took.
	Passes      int
	PassSeconds float64
	// Plugin-side timings and peak memory.
	FitSeconds, LoadSeconds float64
	MaxRSSKiB               int64
	gotResult               bool
}

// NoiseDrawn reports whether the plugin may have drawn noise: it announced
// a privacy step, or returned a result (whose steps it claims to have
// taken). A fit that ends before either released nothing and drew nothing
// the protocol lets it draw.
func (o *FitOutcome) NoiseDrawn() bool {
	return len(o.Announced) > 0 || len(o.Listed) > 0 || o.gotResult
}

// CheckResult is a plugin's answer to the pre-flight check.
type CheckResult struct {
	// Supported is false for a plugin built before the check existed; the
	// request was then not checked.
	Supported bool
	// Footprint is the estimated peak memory of the fit in bytes (0:
	// unknown).
	Footprint int64
	// Mechanisms is the estimator's declaration of the privacy mechanisms
	// its fit will use (Declared false: unknown before the fit). The
	// Runner refuses, before reserving, a request the data set's budget
	// rule cannot admit, and withholds a result whose steps break the
	// declaration.
	Mechanisms sdk.Declaration
	// Passes are, for a fit on remote data, the aggregation pass kinds the
	// fit will request (validated: kinds this host knows, reading the
	// data's kind); the fit may request no other.
	Passes []string
	// Plan is the fit's plan when the check asked for one and the plugin
	// answers plans (nil otherwise).
	Plan *sdk.Plan
}

// Check asks the plugin to validate a request (estimator, parameters,
// grant form, the data's public shape), estimate its memory footprint and
// declare the privacy mechanisms its fit will use, before any budget is
// reserved, and with a plan mode other than sdk.PlanNone answer the fit's
// plan (a dry run on a public reference data set, spending nothing). A declaration naming an unknown
// mechanism is a plugin error. A refusal wraps ErrRequest. ctx bounds the
// call.
func (p *Plugin) Check(ctx context.Context, c Call, plan sdk.PlanMode) (CheckResult, error) {
	_, rpc, err := p.process(ctx)
	if err != nil {
		return CheckResult{}, fmt.Errorf("plugin %s: pre-flight check: %w", p.Name(), err)
	}
	resp, err := rpc.Check(ctx, c.fitRequest(), plan)
	if f, _ := transport.Classify(err); err != nil && f == transport.Unimplemented {
		return CheckResult{}, nil
	}
	if errors.Is(err, transport.ErrMalformed) {
		return CheckResult{}, fmt.Errorf("plugin %s: pre-flight check: %w: %w", p.Name(), err, ErrPlugin)
	}
	if err != nil {
		return CheckResult{}, p.wrap(ctx, "pre-flight check", err)
	}
	chk := CheckResult{Supported: true, Footprint: resp.Footprint, Mechanisms: resp.Mechanisms, Plan: resp.Plan}
	if c.Remote != nil {
		if err := checkPasses(c.Data.Kind, resp.Passes); err != nil {
			return CheckResult{}, fmt.Errorf("plugin %s: pre-flight check: %w: %w", p.Name(), err, ErrPlugin)
		}
		chk.Passes = resp.Passes
	} else if len(resp.Passes) > 0 {
		return CheckResult{}, fmt.Errorf("plugin %s: pre-flight check: declares aggregation passes for a local data set: %w", p.Name(), ErrPlugin)
	}
	return chk, nil
}

// Fit runs one estimator and validates what comes back: outputs complete
// and finite, the steps announced during the fit equal to those the
// result lists, each step's cost implied by its mechanism, sensitivity
// and scale (privacy.VerifyStep), and their composition within the grant.
// A step that fails verification ends the fit at once. On error the
// returned outcome (never nil) still lists what was announced, so the
// caller can tell whether noise may have been drawn.
func (p *Plugin) Fit(ctx context.Context, c Call, ev Events) (*FitOutcome, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the stream, the plugin's work and any pass in flight
	out := &FitOutcome{}
	stream, err := p.fitStream(ctx, c)
	if err != nil {
		return out, p.wrap(ctx, "starting fit", err)
	}
	return p.runPasses(ctx, cancel, stream, c, ev, out)
}

// finish completes a fit stream that ended: it needs a result, whose
// matrices are assembled and whose outcome is validated against c.
func (p *Plugin) finish(c Call, out *FitOutcome, mats *matrixSet) (*FitOutcome, error) {
	if !out.gotResult {
		return out, fmt.Errorf("plugin %s: stream ended without a result: %w", p.Name(), ErrPlugin)
	}
	ms, err := mats.complete()
	if err == nil {
		out.Matrices = ms
		err = validateOutcome(c, out)
	}
	if err != nil {
		return out, fmt.Errorf("plugin %s: %w: %w", p.Name(), err, ErrPlugin)
	}
	return out, nil
}

// handle processes one event of a fit stream.
func (p *Plugin) handle(e transport.Event, grant privacy.Grant, out *FitOutcome, mats *matrixSet, ev Events) error {
	switch x := e.(type) {
	case sdk.Progress:
		if ev.Progress != nil {
			ev.Progress(x)
		}
	case transport.Log:
		if ev.Log != nil {
			ev.Log(string(x))
		}
	case privacy.Step:
		st := x
		out.Announced = append(out.Announced, st)
		if err := privacy.VerifyStep(st); err != nil {
			return fmt.Errorf("plugin %s announced an unverifiable privacy step: %w: %w", p.Name(), err, ErrPlugin)
		}
		if _, err := privacy.Compose(grant, out.Announced); err != nil {
			return fmt.Errorf("plugin %s announced privacy steps that do not fit the grant: %w: %w", p.Name(), err, ErrPlugin)
		}
		if ev.Step != nil {
			ev.Step(st)
		}
	case transport.MatrixChunk:
		return p.takeChunk(mats, x)
	case transport.Result:
		if out.gotResult {
			return fmt.Errorf("plugin %s: two results: %w", p.Name(), ErrPlugin)
		}
		takeResult(out, x)
	default:
		return fmt.Errorf("plugin %s: unknown event %T: %w", p.Name(), x, ErrPlugin)
	}
	return nil
}

// takeChunk adds a chunk of a matrix output, within the output budget.
func (p *Plugin) takeChunk(mats *matrixSet, c transport.MatrixChunk) error {
	if err := p.outputs.Admit(mats.byName, c); err != nil {
		return fmt.Errorf("plugin %s: %w: %w", p.Name(), err, ErrPlugin)
	}
	if err := mats.add(c); err != nil {
		return fmt.Errorf("plugin %s: malformed matrix output: %w: %w", p.Name(), err, ErrPlugin)
	}
	return nil
}

func takeResult(out *FitOutcome, r transport.Result) {
	out.gotResult = true
	out.Listed, out.Scalars, out.Series, out.Guarantee, out.Notes, out.Warnings = r.Steps, r.Scalars, r.Series, r.Guarantee, r.Notes, r.Warnings
	out.FitSeconds, out.LoadSeconds, out.MaxRSSKiB = r.FitSeconds, r.LoadSeconds, r.MaxRSSKiB
}

func (p *Plugin) wrap(ctx context.Context, what string, err error) error {
	if cerr := ctxErr(ctx); cerr != nil {
		return fmt.Errorf("plugin %s: %s: %w", p.Name(), what, cerr)
	}
	f, msg := transport.Classify(err)
	switch f {
	case transport.Refused:
		// The estimator refused the request itself (sdk.BadRequest).
		return fmt.Errorf("plugin %s: %s: %s: %w", p.Name(), what, msg, ErrRequest)
	case transport.Failed:
		// The plugin answered: the estimator failed the request.
		return fmt.Errorf("plugin %s: %s: %s: %w", p.Name(), what, msg, ErrEstimator)
	}
	// Transport-level failure: give the process a moment to be reaped so
	// the message can say it crashed.
	for i := 0; i < 20 && !p.Exited(); i++ {
		time.Sleep(25 * time.Millisecond)
	}
	if p.Exited() {
		return fmt.Errorf("plugin %s crashed during %s: %v: %w", p.Name(), what, msg, ErrPlugin)
	}
	return fmt.Errorf("plugin %s: %s: %v: %w", p.Name(), what, msg, ErrPlugin)
}

// ctxErr is ctx.Err(), or context.DeadlineExceeded once ctx's deadline has
// passed even if its timer has not fired yet: gRPC propagates the deadline
// to the plugin, which may end the stream (RST_STREAM CANCEL) a moment
// before the host's own timer runs, and that is the host's timeout, not a
// plugin failure.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// ErrEstimator is wrapped when the estimator itself reported an error (data
// it cannot use, a refused privacy step, a failed computation): the plugin
// worked, the request did not.
var ErrEstimator = errors.New("estimator error")

// ErrRequest is wrapped when the estimator refused the request as such
// (gRPC InvalidArgument, sdk.BadRequest): parameters that conflict with
// each other, with the data's shape or with the budget's form.
var ErrRequest = errors.New("request refused by the estimator")

// matrixSet assembles chunked matrix outputs (their total size is bounded
// by the plugin's OutputBudget before each new matrix is allocated).
type matrixSet struct {
	byName map[string]*Matrix
	order  []string
}

func newMatrixSet() *matrixSet { return &matrixSet{byName: map[string]*Matrix{}} }

func (s *matrixSet) add(c transport.MatrixChunk) error {
	if c.Name == "" || c.Rows <= 0 || c.Cols <= 0 || c.Rows > math.MaxInt32 || c.Cols > math.MaxInt32 {
		return fmt.Errorf("matrix %q with shape %d×%d", c.Name, c.Rows, c.Cols)
	}
	m, ok := s.byName[c.Name]
	if !ok {
		m = &Matrix{Name: c.Name, Rows: int(c.Rows), Cols: int(c.Cols), Release: c.Release, Doc: c.Doc}
		m.Data = make([]float64, 0, c.Rows*c.Cols)
		s.byName[c.Name] = m
		s.order = append(s.order, c.Name)
	}
	if int64(m.Rows) != c.Rows || int64(m.Cols) != c.Cols {
		return fmt.Errorf("matrix %q changed shape between chunks", c.Name)
	}
	if c.Offset != int64(len(m.Data)) || len(m.Data)+len(c.Data) > m.Rows*m.Cols {
		return fmt.Errorf("matrix %q: chunk at offset %d out of order", c.Name, c.Offset)
	}
	m.Data = append(m.Data, c.Data...)
	return nil
}

func (s *matrixSet) complete() ([]Matrix, error) {
	out := make([]Matrix, 0, len(s.order))
	for _, n := range s.order {
		m := s.byName[n]
		if len(m.Data) != m.Rows*m.Cols {
			return nil, fmt.Errorf("matrix %q incomplete (%d of %d values)", n, len(m.Data), m.Rows*m.Cols)
		}
		out = append(out, *m)
	}
	return out, nil
}

// validateOutcome checks a complete result and, when it holds, sets the
// one verified list of steps and its composition.
func validateOutcome(c Call, out *FitOutcome) error {
	if err := checkFinite(out); err != nil {
		return err
	}
	if err := sameSteps(out.Announced, out.Listed); err != nil {
		return err
	}
	for _, s := range out.Listed {
		if err := privacy.VerifyStep(s); err != nil {
			return err
		}
	}
	ach, err := privacy.Compose(c.Grant, out.Listed)
	if err != nil {
		return fmt.Errorf("privacy steps do not fit the grant: %w", err)
	}
	g := out.Guarantee
	if g.Kind == "" {
		return errors.New("result carries no guarantee")
	}
	if g.Kind != privacy.None && len(out.Listed) == 0 {
		return fmt.Errorf("guarantee %q claimed with no privacy step", g.Kind)
	}
	if c.Seed != nil && !g.Seeded {
		return errors.New("a seeded run must say its guarantee does not hold against whoever knows the seed")
	}
	cert, err := privacy.Certify(g, c.Grant, out.Listed)
	if err != nil {
		return fmt.Errorf("the guarantee does not follow from the steps: %w", err)
	}
	out.Steps, out.Achieved, out.Certified = append([]privacy.Step{}, out.Listed...), ach, cert
	return nil
}

// sameSteps checks that the steps a result lists are exactly those
// announced during the fit, in order.
func sameSteps(announced, listed []privacy.Step) error {
	if len(announced) != len(listed) {
		return fmt.Errorf("result lists %d privacy steps but %d were announced", len(listed), len(announced))
	}
	for i := range listed {
		if !reflect.DeepEqual(announced[i], listed[i]) {
			return fmt.Errorf("privacy step %d listed in the result (%+v) differs from the one announced (%+v)", i+1, listed[i], announced[i])
		}
	}
	return nil
}

func checkFinite(out *FitOutcome) error {
	for _, m := range out.Matrices {
		for i, v := range m.Data {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("matrix %q holds a non-finite value at %d", m.Name, i)
			}
		}
	}
	return nil
}
