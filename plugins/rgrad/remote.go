package rgrad

import (
	"context"
	"fmt"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/sdk"
)

// dataPass is the four passes over the samples every algorithm of this
// package is written with: over the in-memory design (localPass, the
// parallel designPass) or through aggregation passes over a data set held
// elsewhere (remotePass, the kinds of engine/pass). Each returns means
// (sums divided by n) exactly as designPass's methods document them.
type dataPass interface {
	// moment sets out = Σ_i y_i x_i / n.
	moment(ctx context.Context, out []float64) error
	// clippedMoment sets out = Σ_i clip(y_i, cy)·clip(x_i, cx) / n and
	// returns the number of samples where some clip was active.
	clippedMoment(ctx context.Context, out []float64, cx, cy float64) (int, error)
	// gradient sets out = Σ_i res_i x_i / n at m and returns the loss
	// Σ_i res_i² / (2n).
	gradient(ctx context.Context, out, m []float64) (float64, error)
	// clippedGradient sets out = Σ_i c_i res_i x_i / n with the per-sample
	// projected terms clipped to τ at the tangent space (u, vt) and returns
	// the loss and the number of clipped samples.
	clippedGradient(ctx context.Context, out, m, u, vt []float64, r int, tau float64) (float64, int, error)
}

// localPass runs the passes over the in-memory design.
type localPass struct{ dp *designPass }

func (l localPass) moment(_ context.Context, out []float64) error {
	l.dp.moment(out)
	return nil
}

func (l localPass) clippedMoment(_ context.Context, out []float64, cx, cy float64) (int, error) {
	return l.dp.clippedMoment(out, cx, cy), nil
}

func (l localPass) gradient(_ context.Context, out, m []float64) (float64, error) {
	return l.dp.gradient(out, m), nil
}

func (l localPass) clippedGradient(_ context.Context, out, m, u, vt []float64, r int, tau float64) (float64, int, error) {
	loss, c := l.dp.clippedGradient(out, m, u, vt, r, tau)
	return loss, c, nil
}

// remotePass runs the passes through the data set's Passer. It validates
// every request and every result against the pass kind itself (as the
// host does), so that a result breaking its kind's bounds is refused
// before any noise is drawn from it, whatever Passer the run was given.
type remotePass struct {
	sh *data.Remote
}

// newDataPass returns the passes over d: remote when d is held elsewhere.
func newDataPass(d *data.Dataset) dataPass {
	if d.Remote != nil {
		return remotePass{sh: d.Remote}
	}
	return localPass{newDesignPass(d.X, d.Y, d.D1, d.D2)}
}

// run validates req, runs it and checks the result; it returns the sum
// divided by n in out and the result's scalars.
func (rp remotePass) run(ctx context.Context, req data.PassRequest, out []float64) (map[string]float64, error) {
	spec, err := pass.Validate(data.Trace, rp.sh, req)
	if err != nil {
		return nil, fmt.Errorf("rgrad: %w", err)
	}
	res, err := rp.sh.Passer.Pass(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("rgrad: pass %s: %w", req.Kind, err)
	}
	if err := pass.CheckResult(spec, rp.sh, req, res); err != nil {
		return nil, fmt.Errorf("rgrad: %w", err)
	}
	sum, _ := res.Output("sum")
	n := float64(rp.sh.N)
	for j, v := range sum.Data {
		out[j] = v / n
	}
	return res.Scalars, nil
}

func row(name string, v []float64) data.Array {
	return data.Array{Name: name, Rows: 1, Cols: len(v), Data: v}
}

func (rp remotePass) moment(ctx context.Context, out []float64) error {
	_, err := rp.run(ctx, data.PassRequest{Kind: pass.TraceMoment}, out)
	return err
}

func (rp remotePass) clippedMoment(ctx context.Context, out []float64, cx, cy float64) (int, error) {
	sc, err := rp.run(ctx, data.PassRequest{Kind: pass.TraceClippedMoment, Params: map[string]float64{"cx": cx, "cy": cy}}, out)
	if err != nil {
		return 0, err
	}
	return int(sc["clipped"]), nil
}

func (rp remotePass) gradient(ctx context.Context, out, m []float64) (float64, error) {
	sc, err := rp.run(ctx, data.PassRequest{Kind: pass.TraceGradient, Inputs: []data.Array{row("m", m)}}, out)
	if err != nil {
		return 0, err
	}
	return sc["loss"] / (2 * float64(rp.sh.N)), nil
}

func (rp remotePass) clippedGradient(ctx context.Context, out, m, u, vt []float64, r int, tau float64) (float64, int, error) {
	req := data.PassRequest{Kind: pass.TraceClippedGradient, Params: map[string]float64{"tau": tau, "rank": float64(r)},
		Inputs: []data.Array{row("m", m),
			{Name: "u", Rows: rp.sh.D1, Cols: r, Data: u}, {Name: "vt", Rows: r, Cols: rp.sh.D2, Data: vt}}}
	sc, err := rp.run(ctx, req, out)
	if err != nil {
		return 0, 0, err
	}
	return sc["loss"] / (2 * float64(rp.sh.N)), int(sc["clipped"]), nil
}

// Passes implements sdk.RemoteEstimator: the pass kinds a fit requests on
// trace data held elsewhere. Every option works on such data (a design
// covariance file is read by the estimator, not from the samples): the
// non-private reference reads trace.moment and trace.gradient, rgrad-dp
// and rgrad-weak trace.moment and trace.clipped_gradient, rgrad-strict
// trace.clipped_moment and trace.clipped_gradient; one pass initialises
// and each of the T iterations makes one more.
func (e *estimator) Passes(_ any, s sdk.Shape) ([]string, error) {
	if s.Kind != data.Trace {
		return nil, fmt.Errorf("rgrad reads trace data, not %s data", s.Kind)
	}
	switch e.mode {
	case NonPrivate:
		return []string{pass.TraceMoment, pass.TraceGradient}, nil
	case Strict:
		return []string{pass.TraceClippedMoment, pass.TraceClippedGradient}, nil
	default:
		return []string{pass.TraceMoment, pass.TraceClippedGradient}, nil
	}
}
