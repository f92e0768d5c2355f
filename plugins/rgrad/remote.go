package rgrad

import (
	"context"
	"fmt"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/sdk"
)

// passes are the five aggregation passes over the samples every algorithm
// of this package is written with (the kinds of engine/pass, whose
// per-sample terms are engine/kernel's trace kernels). A data set in a
// file is served in process by pass.Local, parallel over row blocks; one
// held elsewhere (shards) by the Passer the host hands the fit. Every
// request and result is validated against its kind (pass.Kind.Run, as the
// host does), so that a result breaking its kind's bounds is refused
// before any noise is drawn from it, whatever Passer the run was given.
// Each method returns means: the sum divided by n.
type passes struct {
	ds *data.Dataset
	n  float64
}

// newPasses returns the passes over d.
func newPasses(d *data.Dataset) passes { return passes{ds: d, n: float64(pass.ShapeOf(d).N)} }

// mean sets out = sum / n.
func (ps passes) mean(out, sum []float64) {
	for j, v := range sum {
		out[j] = v / ps.n
	}
}

// moment sets out = Σ_i y_i x_i / n.
func (ps passes) moment(ctx context.Context, out []float64) error {
	res, err := pass.TraceMomentKind.Run(ctx, ps.ds, pass.TraceMomentRequest{})
	if err != nil {
		return fmt.Errorf("rgrad: %w", err)
	}
	ps.mean(out, res.Sum)
	return nil
}

// clippedMoment sets out = Σ_i clip(y_i, cy)·clip(x_i, cx) / n and returns
// the number of samples where some clip was active.
func (ps passes) clippedMoment(ctx context.Context, out []float64, cx, cy float64) (int, error) {
	res, err := pass.TraceClippedMomentKind.Run(ctx, ps.ds, pass.TraceClippedMomentRequest{ClipX: cx, ClipY: cy})
	if err != nil {
		return 0, fmt.Errorf("rgrad: %w", err)
	}
	ps.mean(out, res.Sum)
	return int(res.Clipped), nil
}

// gradient sets out = Σ_i res_i x_i / n at m and returns the loss
// Σ_i res_i² / (2n).
func (ps passes) gradient(ctx context.Context, out, m []float64) (float64, error) {
	res, err := pass.TraceGradientKind.Run(ctx, ps.ds, pass.TraceGradientRequest{M: m})
	if err != nil {
		return 0, fmt.Errorf("rgrad: %w", err)
	}
	ps.mean(out, res.Sum)
	return res.Loss / (2 * ps.n), nil
}

// clippedGradient sets out = Σ_i w_i x_i / n with the per-sample projected
// terms w_i·P_T(X_i) clipped to τ in the tangent space t and returns the
// loss and the number of clipped samples.
func (ps passes) clippedGradient(ctx context.Context, out, m []float64, t kernel.Tangent, tau float64) (float64, int, error) {
	res, err := pass.TraceClippedGradientKind.Run(ctx, ps.ds, pass.TraceClippedGradientRequest{Tau: tau, Rank: t.R, M: m, U: t.U, Vt: t.Vt})
	if err != nil {
		return 0, 0, fmt.Errorf("rgrad: %w", err)
	}
	ps.mean(out, res.Sum)
	return res.Loss / (2 * ps.n), int(res.Clipped), nil
}

// Passes implements sdk.RemoteEstimator: the pass kinds a fit requests on
// trace data held elsewhere. Every option works on such data (a design
// covariance file is read by the estimator, not from the samples): the
// non-private reference reads trace.moment and trace.gradient, rgrad-dp
// and rgrad-weak trace.moment and trace.clipped_gradient, rgrad-strict
// trace.clipped_moment and trace.clipped_gradient; one pass initialises
// and each of the T iterations makes one more. The private estimate of
// the model parameters or clips reads trace.response_counts (and, for
// rgrad-dp and rgrad-weak, trace.clipped_moment) once more each.
func (e *estimator) Passes(_ any, s sdk.Shape) ([]string, error) {
	if s.Kind != data.Trace {
		return nil, fmt.Errorf("rgrad reads trace data, not %s data", s.Kind)
	}
	switch e.mode {
	case NonPrivate:
		return []string{pass.TraceMoment, pass.TraceGradient}, nil
	case Strict:
		return []string{pass.TraceResponseCounts, pass.TraceClippedMoment, pass.TraceClippedGradient}, nil
	default:
		return []string{pass.TraceResponseCounts, pass.TraceClippedMoment, pass.TraceMoment, pass.TraceClippedGradient}, nil
	}
}
