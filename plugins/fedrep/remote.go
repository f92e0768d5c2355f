package fedrep

import (
	"context"
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/sdk"
)

// The path of the FedRep estimators through aggregation passes
// (DERIVATIONS.md §14): on a data set held elsewhere (the Beam path) every
// statistic a fit reads from the users' rows comes back from a users pass
// (engine/pass/users.go), computed per user after grouping, bounded per
// user and summed over users; the privacy steps are those of the local fit.

// fedrepAgg is what the FedRep rounds read from the users' data: the local
// engine over the rows, or the passes of a remote data set.
type fedrepAgg interface {
	// aggregate returns Σ_i clip(∇_i(U), ψ) (d×k) and the clipped count.
	aggregate(ctx context.Context, u []float64, t int) ([]float64, int, error)
	// skipped is the number of users who sat out the last round.
	skipped() int
	// fitHeads fits the heads for U (into heads when not nil) and returns
	// the mean hold-out loss (NaN without hold-out rows).
	fitHeads(ctx context.Context, u []float64, heads *mat.Dense) (float64, error)
	// gradHist is the histogram of the users' gradient norms at U on the
	// quantile grid.
	gradHist(ctx context.Context, u []float64) ([]float64, error)
	// setClip sets ψ.
	setClip(psi float64)
	// dims returns the number of users, the working dimension and the rank.
	dims() (n, d, k int)
}

// gradHist implements fedrepAgg.
func (e *fedrepEngine) gradHist(ctx context.Context, u []float64) ([]float64, error) {
	norms, err := e.gradNorms(ctx, u, 0)
	if err != nil {
		return nil, err
	}
	return quantileHistogram(norms, quantileEdges()), nil
}

// setClip implements fedrepAgg.
func (e *fedrepEngine) setClip(psi float64) { e.psi = psi }

// dims implements fedrepAgg.
func (e *fedrepEngine) dims() (n, d, k int) { return e.lay.n(), e.d, e.k }

// remoteUsers reaches a users data set through passes: the public shape,
// the split and feature parameters every pass carries, and the current
// clip and rank.
type remoteUsers struct {
	passer  data.Passer
	n       int       // users
	p, d    int       // data dimension, working dimension
	m       []float64 // public projection (d×p, row-major), nil: none
	params  map[string]float64
	k       int
	psi     float64 // +Inf: no clipping
	headAll float64 // 1: heads on S⁰ ∪ S¹ (the hold-out evaluation)
}

// newRemoteUsers reads the public shape of a remote users data set. back
// is the map back from a public projection (Mᵀ, p×k′), nil without one.
func newRemoteUsers(ds *data.Dataset, sp *splitOptions, k int, psi float64, back *mat.Dense, loss lossKind) (*remoteUsers, error) {
	r := ds.Remote
	if ds.Kind != data.Users || r == nil || r.Passer == nil {
		return nil, fmt.Errorf("need a remote users data set")
	}
	if r.Users < 1 {
		return nil, fmt.Errorf("data set has no users")
	}
	ru := &remoteUsers{passer: r.Passer, n: r.Users, p: r.P, d: r.P, k: k, psi: psi,
		params: map[string]float64{"local_fraction": sp.LocalFraction, "holdout": sp.Holdout, "sign": 0, "proj": 0}}
	if loss == lossLogistic {
		ru.params["sign"] = 1
	}
	if sp.headAll() {
		ru.headAll = 1
	}
	if back != nil {
		p, kp := back.Dims()
		if p != r.P {
			return nil, fmt.Errorf("projection for %d features, the data has %d", p, r.P)
		}
		ru.m = mat.DenseCopyOf(back.T()).RawMatrix().Data
		ru.d = kp
		ru.params["proj"] = float64(kp)
	}
	return ru, nil
}

// request builds a users request of the kind with the common parameters,
// the extra ones, U (when not nil) and extra inputs.
func (r *remoteUsers) request(kind string, extra map[string]float64, u []float64, inputs ...data.Array) data.PassRequest {
	req := data.PassRequest{Kind: kind, Params: map[string]float64{}}
	for k, v := range r.params {
		req.Params[k] = v
	}
	for k, v := range extra {
		req.Params[k] = v
	}
	if u != nil {
		req.Inputs = append(req.Inputs, data.Array{Name: "u", Rows: r.d, Cols: r.k, Data: u})
	}
	req.Inputs = append(req.Inputs, inputs...)
	if r.m != nil {
		req.Inputs = append(req.Inputs, data.Array{Name: "m", Rows: r.d, Cols: r.p, Data: r.m})
	}
	return req
}

// run runs one pass and checks that it aggregated every user.
func (r *remoteUsers) run(ctx context.Context, req data.PassRequest) (*data.PassResult, error) {
	res, err := r.passer.Pass(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("pass %s: %w", req.Kind, err)
	}
	if res.Records != int64(r.n) {
		return nil, fmt.Errorf("pass %s aggregated %d users, the data set has %d", req.Kind, res.Records, r.n)
	}
	return res, nil
}

// clipParam is ψ as a pass parameter (0: no clipping).
func clipParam(psi float64) float64 {
	if math.IsInf(psi, 1) {
		return 0
	}
	return psi
}

// lossParam is the loss as a pass parameter.
func lossParam(r *remoteUsers) float64 { return r.params["sign"] }

// output reads a named output of a pass result.
func output(res *data.PassResult, name string) ([]float64, error) {
	a, ok := res.Output(name)
	if !ok {
		return nil, fmt.Errorf("pass result without %s", name)
	}
	return a.Data, nil
}

// edgesInput is the quantile grid as a pass input.
func edgesInput() (data.Array, float64) {
	e := quantileEdges()
	return data.Array{Name: "edges", Rows: 1, Cols: len(e), Data: e}, float64(len(e))
}

// aggregate implements fedrepAgg.
func (r *remoteUsers) aggregate(ctx context.Context, u []float64, _ int) ([]float64, int, error) {
	req := r.request(pass.UsersGradient, map[string]float64{"rank": float64(r.k), "loss": lossParam(r), "clip": clipParam(r.psi)}, u)
	res, err := r.run(ctx, req)
	if err != nil {
		return nil, 0, err
	}
	sum, err := output(res, "sum")
	if err != nil {
		return nil, 0, err
	}
	return sum, int(res.Scalars["clipped"]), nil
}

// skipped implements fedrepAgg: experiment mode only, no user sits out.
func (r *remoteUsers) skipped() int { return 0 }

// fitHeads implements fedrepAgg: the mean hold-out loss through a pass
// (NaN without hold-out); heads are never gathered (Passes refuses them).
func (r *remoteUsers) fitHeads(ctx context.Context, u []float64, heads *mat.Dense) (float64, error) {
	if heads != nil {
		return 0, errors.New("internal error: per-user heads requested on the remote path")
	}
	if r.params["holdout"] == 0 {
		return math.NaN(), nil
	}
	req := r.request(pass.UsersHoldout, map[string]float64{"rank": float64(r.k), "loss": lossParam(r), "head_all": r.headAll}, u)
	res, err := r.run(ctx, req)
	if err != nil {
		return 0, err
	}
	n := res.Scalars["loss_users"]
	if n == 0 {
		return math.NaN(), nil
	}
	return res.Scalars["loss_sum"] / n, nil
}

// gradHist implements fedrepAgg.
func (r *remoteUsers) gradHist(ctx context.Context, u []float64) ([]float64, error) {
	e, bins := edgesInput()
	req := r.request(pass.UsersGradientHist, map[string]float64{"rank": float64(r.k), "loss": lossParam(r), "bins": bins}, u, e)
	res, err := r.run(ctx, req)
	if err != nil {
		return nil, err
	}
	return output(res, "counts")
}

// setClip implements fedrepAgg.
func (r *remoteUsers) setClip(psi float64) { r.psi = psi }

// dims implements fedrepAgg.
func (r *remoteUsers) dims() (n, d, k int) { return r.n, r.d, r.k }

// ustatHist is the histogram of the users' unclipped ‖Z_i‖_F on the
// quantile grid.
func (r *remoteUsers) ustatHist(ctx context.Context) ([]float64, error) {
	e, bins := edgesInput()
	res, err := r.run(ctx, r.request(pass.UsersUstatHist, map[string]float64{"bins": bins}, nil, e))
	if err != nil {
		return nil, err
	}
	return output(res, "counts")
}

// ustatMean is (1/n) Σ_i clip(Z_i, ψ_init) and the clipped count.
func (r *remoteUsers) ustatMean(ctx context.Context, psi float64) (*mat.SymDense, int, error) {
	res, err := r.run(ctx, r.request(pass.UsersUstat, map[string]float64{"clip": clipParam(psi)}, nil))
	if err != nil {
		return nil, 0, err
	}
	sum, err := output(res, "sum")
	if err != nil {
		return nil, 0, err
	}
	inv := 1 / float64(r.n)
	for i := range sum {
		sum[i] *= inv
	}
	return mat.NewSymDense(r.d, sum), int(res.Scalars["clipped"]), nil
}

// altminStats returns Priv-AltMin's U-step statistics A (dk×dk) and b of
// the listed users through a users.altmin pass (the group as a mask over
// the users in increasing id order).
func (r *remoteUsers) altminStats(ctx context.Context, u []float64, users []int32, cw, cy float64, portion int) (*mat.SymDense, []float64, error) {
	mask := make([]float64, r.n)
	for _, i := range users {
		mask[i] = 1
	}
	req := r.request(pass.UsersAltMin, map[string]float64{"rank": float64(r.k), "loss": 0, "clip_w": cw, "clip_y": cy, "portion": float64(portion)}, u,
		data.Array{Name: "group", Rows: 1, Cols: r.n, Data: mask})
	res, err := r.run(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	a, err := output(res, "a")
	if err != nil {
		return nil, nil, err
	}
	b, err := output(res, "b")
	if err != nil {
		return nil, nil, err
	}
	return mat.NewSymDense(r.d*r.k, a), b, nil
}

// headsRefusal is the refusal of per-user heads on the remote path.
const headsRefusal = "output_v=true: the per-user heads v_i are not gathered through the host on the remote path (each user fits its own head from the released U, e.g. with dplr transform); set output_v=false to release U alone (DERIVATIONS.md §14)"

// remotePasses returns the pass kinds a FedRep-type fit with configuration
// c requests, or refuses, from the options alone, what the remote path
// cannot do: the per-user heads (never gathered through the host), theory
// mode (its per-user random batches would need the users' row counts) and
// the private selection (its subsets and leave-one-out scores).
func remotePasses(c *fedrepConfig) ([]string, error) {
	if c.split().OutputV {
		return nil, sdk.BadRequest(headsRefusal)
	}
	if c.theory() {
		return nil, sdk.BadRequest("mode=theory is not available on the remote path (its per-user random batches are drawn on the local rows); use mode=experiment")
	}
	if c.sel != nil {
		return nil, sdk.BadRequest("the private selection (select_rank, select_clip_quantile) is not available on the remote path; fix rank and clip_quantile")
	}
	kinds := []string{pass.UsersGradient}
	if c.init == "private" || c.init == "ustat" {
		kinds = append(kinds, pass.UsersUstat)
	}
	autoClip, autoInit := c.autoClips()
	if autoInit {
		kinds = append(kinds, pass.UsersUstatHist)
	}
	if autoClip {
		kinds = append(kinds, pass.UsersGradientHist)
	}
	if c.split().Holdout > 0 {
		kinds = append(kinds, pass.UsersHoldout)
	}
	return kinds, nil
}

// Passes implements sdk.RemoteEstimator.
func (PrivateFedRep) Passes(opts any, _ sdk.Shape) ([]string, error) {
	o, ok := opts.(*privateFedRepOptions)
	if !ok {
		return nil, fmt.Errorf("internal error: options of type %T", opts)
	}
	return remotePasses(o.config())
}

// Passes implements sdk.RemoteEstimator.
func (NonPrivateFedRep) Passes(opts any, _ sdk.Shape) ([]string, error) {
	o, ok := opts.(*nonPrivateFedRepOptions)
	if !ok {
		return nil, fmt.Errorf("internal error: options of type %T", opts)
	}
	return remotePasses(o.config())
}

// Passes implements sdk.RemoteEstimator: Priv-AltMin's U-steps are
// users.altmin passes (the group a public mask), its start the passes of
// fedrep-private's; the per-user heads are refused as there.
func (PrivAltMin) Passes(opts any, _ sdk.Shape) ([]string, error) {
	o, ok := opts.(*altminOptions)
	if !ok {
		return nil, fmt.Errorf("internal error: options of type %T", opts)
	}
	if o.OutputV {
		return nil, sdk.BadRequest(headsRefusal)
	}
	kinds := []string{pass.UsersAltMin}
	if o.Init == "private" {
		kinds = append(kinds, pass.UsersUstat)
	}
	if o.autoInitClip() {
		kinds = append(kinds, pass.UsersUstatHist)
	}
	if o.Holdout > 0 {
		kinds = append(kinds, pass.UsersHoldout)
	}
	return kinds, nil
}

// Passes implements sdk.RemoteEstimator.
func (Classify) Passes(opts any, _ sdk.Shape) ([]string, error) {
	o, ok := opts.(*classifyOptions)
	if !ok {
		return nil, fmt.Errorf("internal error: options of type %T", opts)
	}
	return remotePasses(o.config())
}
