package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/proto/dplrpb"
	"github.com/dplr/dplr/engine/sdk"
)

// Matrix is a matrix output received from a plugin, row-major.
type Matrix struct {
	Name       string
	Rows, Cols int
	Data       []float64
	Release    string
	Doc        string
}

// FitOutcome is a validated fit result.
type FitOutcome struct {
	Matrices []Matrix
	Result   *dplrpb.FitResult
	// Steps are the privacy steps the plugin announced while running
	// (before drawing their noise). They are known even when the fit fails.
	Steps []privacy.Step
	// Achieved is the host's own composition of the steps under the grant.
	Achieved privacy.Achieved
}

// NoiseDrawn reports whether any privacy step was started.
func (o *FitOutcome) NoiseDrawn() bool { return len(o.Steps) > 0 }

// Fit runs one estimator and validates what comes back. onEvent, when
// non-nil, sees progress and log events as they arrive. On error, the
// returned outcome (never nil) still lists the steps announced before the
// failure, so the caller can tell whether noise was drawn.
func (p *Plugin) Fit(ctx context.Context, req *dplrpb.FitRequest, onEvent func(*dplrpb.FitEvent)) (*FitOutcome, error) {
	out := &FitOutcome{}
	stream, err := p.fitStream(ctx, req)
	if err != nil {
		return out, p.wrap(ctx, "starting fit", err)
	}
	byName := map[string]*Matrix{}
	var order []string
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out, p.wrap(ctx, "fit", err)
		}
		switch e := ev.GetEvent().(type) {
		case *dplrpb.FitEvent_Progress, *dplrpb.FitEvent_Log:
			if onEvent != nil {
				onEvent(ev)
			}
		case *dplrpb.FitEvent_Step:
			out.Steps = append(out.Steps, sdk.StepFromProto(e.Step))
			if onEvent != nil {
				onEvent(ev)
			}
		case *dplrpb.FitEvent_Matrix:
			if err := p.outputs.Admit(byName, e.Matrix); err != nil {
				return out, fmt.Errorf("plugin %s: %w: %w", p.Name(), err, ErrPlugin)
			}
			if err := addChunk(byName, &order, e.Matrix); err != nil {
				return out, fmt.Errorf("plugin %s: malformed matrix output: %w: %w", p.Name(), err, ErrPlugin)
			}
		case *dplrpb.FitEvent_Result:
			if out.Result != nil {
				return out, fmt.Errorf("plugin %s: two results: %w", p.Name(), ErrPlugin)
			}
			out.Result = e.Result
		default:
			return out, fmt.Errorf("plugin %s: unknown event %T: %w", p.Name(), e, ErrPlugin)
		}
	}
	if out.Result == nil {
		return out, fmt.Errorf("plugin %s: stream ended without a result: %w", p.Name(), ErrPlugin)
	}
	for _, n := range order {
		m := byName[n]
		if len(m.Data) != m.Rows*m.Cols {
			return out, fmt.Errorf("plugin %s: matrix %q incomplete (%d of %d values): %w", p.Name(), n, len(m.Data), m.Rows*m.Cols, ErrPlugin)
		}
		out.Matrices = append(out.Matrices, *m)
	}
	if err := validateResult(req, out); err != nil {
		return out, fmt.Errorf("plugin %s: %w: %w", p.Name(), err, ErrPlugin)
	}
	return out, nil
}

func (p *Plugin) wrap(ctx context.Context, what string, err error) error {
	if cerr := ctxErr(ctx); cerr != nil {
		return fmt.Errorf("plugin %s: %s: %w", p.Name(), what, cerr)
	}
	st, _ := status.FromError(err)
	switch st.Code() {
	case codes.InvalidArgument:
		// The estimator refused the request itself (sdk.BadRequest).
		return fmt.Errorf("plugin %s: %s: %s: %w", p.Name(), what, st.Message(), ErrRequest)
	case codes.FailedPrecondition, codes.NotFound, codes.OutOfRange:
		// The plugin answered: the estimator failed the request.
		return fmt.Errorf("plugin %s: %s: %s: %w", p.Name(), what, st.Message(), ErrEstimator)
	}
	// Transport-level failure: give the process a moment to be reaped so
	// the message can say it crashed.
	for i := 0; i < 20 && !p.Exited(); i++ {
		time.Sleep(25 * time.Millisecond)
	}
	if p.Exited() {
		return fmt.Errorf("plugin %s crashed during %s: %v: %w", p.Name(), what, st.Message(), ErrPlugin)
	}
	return fmt.Errorf("plugin %s: %s: %v: %w", p.Name(), what, st.Message(), ErrPlugin)
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

const maxOutputValues = 1 << 28 // 2 GiB of float64: refuse absurd declared shapes

func addChunk(byName map[string]*Matrix, order *[]string, c *dplrpb.MatrixChunk) error {
	if c.GetName() == "" || c.GetRows() <= 0 || c.GetCols() <= 0 || c.GetRows()*c.GetCols() > maxOutputValues {
		return fmt.Errorf("matrix %q with shape %d×%d", c.GetName(), c.GetRows(), c.GetCols())
	}
	m, ok := byName[c.GetName()]
	if !ok {
		m = &Matrix{Name: c.GetName(), Rows: int(c.GetRows()), Cols: int(c.GetCols()), Release: c.GetRelease(), Doc: c.GetDoc()}
		m.Data = make([]float64, 0, m.Rows*m.Cols)
		byName[c.GetName()] = m
		*order = append(*order, c.GetName())
	}
	if int64(m.Rows) != c.GetRows() || int64(m.Cols) != c.GetCols() {
		return fmt.Errorf("matrix %q changed shape between chunks", c.GetName())
	}
	if c.GetOffset() != int64(len(m.Data)) || len(m.Data)+len(c.GetData()) > m.Rows*m.Cols {
		return fmt.Errorf("matrix %q: chunk at offset %d out of order", c.GetName(), c.GetOffset())
	}
	m.Data = append(m.Data, c.GetData()...)
	return nil
}

func validateResult(req *dplrpb.FitRequest, out *FitOutcome) error {
	for _, m := range out.Matrices {
		for i, v := range m.Data {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("matrix %q holds a non-finite value at %d", m.Name, i)
			}
		}
	}
	grant := sdk.GrantFromProto(req.GetGrant())
	var steps []privacy.Step
	for _, s := range out.Result.GetSteps() {
		steps = append(steps, sdk.StepFromProto(s))
	}
	if len(steps) != len(out.Steps) {
		return fmt.Errorf("result lists %d privacy steps but %d were announced", len(steps), len(out.Steps))
	}
	ach, err := privacy.Compose(grant, steps)
	if err != nil {
		return fmt.Errorf("privacy steps do not fit the grant: %w", err)
	}
	out.Achieved = ach
	g := out.Result.GetGuarantee()
	if g == nil || g.GetKind() == "" {
		return errors.New("result carries no guarantee")
	}
	if g.GetKind() != string(privacy.None) && len(steps) == 0 {
		return fmt.Errorf("guarantee %q claimed with no privacy step", g.GetKind())
	}
	if req.Seed != nil && !g.GetSeeded() {
		return errors.New("a seeded run must say its guarantee does not hold against whoever knows the seed")
	}
	return nil
}
