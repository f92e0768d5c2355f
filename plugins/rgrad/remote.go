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
// request and result is validated against its kind here too (as the host
// does), so that a result breaking its kind's bounds is refused before any
// noise is drawn from it, whatever Passer the run was given. Each method
// returns means: the sum divided by n.
type passes struct{ sh *data.Remote }

// newPasses returns the passes over d.
func newPasses(d *data.Dataset) passes {
	if d.Remote != nil {
		return passes{sh: d.Remote}
	}
	sh := *pass.ShapeOf(d)
	sh.Passer = pass.Local(d)
	return passes{sh: &sh}
}

// exec validates req, runs it and checks the result.
func (ps passes) exec(ctx context.Context, req data.PassRequest) (*data.PassResult, error) {
	spec, err := pass.Validate(data.Trace, ps.sh, req)
	if err != nil {
		return nil, fmt.Errorf("rgrad: %w", err)
	}
	res, err := ps.sh.Passer.Pass(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("rgrad: pass %s: %w", req.Kind, err)
	}
	if err := pass.CheckResult(spec, ps.sh, req, res); err != nil {
		return nil, fmt.Errorf("rgrad: %w", err)
	}
	return res, nil
}

// run runs req as exec does; it returns the sum divided by n in out and
// the result's scalars.
func (ps passes) run(ctx context.Context, req data.PassRequest, out []float64) (map[string]float64, error) {
	res, err := ps.exec(ctx, req)
	if err != nil {
		return nil, err
	}
	sum, _ := res.Output("sum")
	n := float64(ps.sh.N)
	for j, v := range sum.Data {
		out[j] = v / n
	}
	return res.Scalars, nil
}

// moment sets out = Σ_i y_i x_i / n.
func (ps passes) moment(ctx context.Context, out []float64) error {
	_, err := ps.run(ctx, pass.TraceMomentRequest{}.Request(), out)
	return err
}

// clippedMoment sets out = Σ_i clip(y_i, cy)·clip(x_i, cx) / n and returns
// the number of samples where some clip was active.
func (ps passes) clippedMoment(ctx context.Context, out []float64, cx, cy float64) (int, error) {
	sc, err := ps.run(ctx, pass.TraceClippedMomentRequest{ClipX: cx, ClipY: cy}.Request(), out)
	if err != nil {
		return 0, err
	}
	return int(sc["clipped"]), nil
}

// gradient sets out = Σ_i res_i x_i / n at m and returns the loss
// Σ_i res_i² / (2n).
func (ps passes) gradient(ctx context.Context, out, m []float64) (float64, error) {
	sc, err := ps.run(ctx, pass.TraceGradientRequest{M: m}.Request(), out)
	if err != nil {
		return 0, err
	}
	return sc["loss"] / (2 * float64(ps.sh.N)), nil
}

// clippedGradient sets out = Σ_i w_i x_i / n with the per-sample projected
// terms w_i·P_T(X_i) clipped to τ in the tangent space t and returns the
// loss and the number of clipped samples.
func (ps passes) clippedGradient(ctx context.Context, out, m []float64, t kernel.Tangent, tau float64) (float64, int, error) {
	sc, err := ps.run(ctx, pass.TraceClippedGradientRequest{Tau: tau, M: m, Tangent: t}.Request(), out)
	if err != nil {
		return 0, 0, err
	}
	return sc["loss"] / (2 * float64(ps.sh.N)), int(sc["clipped"]), nil
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
