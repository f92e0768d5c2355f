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
// the split, feature and loss fields every request carries, and the
// current clip and rank.
type remoteUsers struct {
	passer data.Passer
	n, d   int               // users, working dimension
	base   pass.UsersRequest // the split, the projection, the loss, the heads' rows
	k      int
	psi    float64 // +Inf: no clipping
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
	logistic := loss == lossLogistic
	ru := &remoteUsers{passer: r.Passer, n: r.Users, d: r.P, k: k, psi: psi,
		base: pass.UsersRequest{LocalFraction: sp.LocalFraction, Holdout: sp.Holdout, Sign: logistic, Logistic: logistic, HeadAll: sp.headAll()}}
	if back != nil {
		p, kp := back.Dims()
		if p != r.P {
			return nil, fmt.Errorf("projection for %d features, the data has %d", p, r.P)
		}
		ru.base.M, ru.base.Proj = mat.DenseCopyOf(back.T()).RawMatrix().Data, kp
		ru.d = kp
	}
	return ru, nil
}

// request returns a request of the kind with the common fields, U (nil
// for the U-statistic kinds) and the rank.
func (r *remoteUsers) request(kind string, u []float64) pass.UsersRequest {
	q := r.base
	q.Kind, q.U, q.Rank = kind, u, r.k
	return q
}

// run runs one pass and checks that it aggregated every user.
func (r *remoteUsers) run(ctx context.Context, q pass.UsersRequest) (*data.PassResult, error) {
	res, err := r.passer.Pass(ctx, q.Encode())
	if err != nil {
		return nil, fmt.Errorf("pass %s: %w", q.Kind, err)
	}
	if res.Records != int64(r.n) {
		return nil, fmt.Errorf("pass %s aggregated %d users, the data set has %d", q.Kind, res.Records, r.n)
	}
	return res, nil
}

// output reads a named output of a pass result.
func output(res *data.PassResult, name string) ([]float64, error) {
	a, ok := res.Output(name)
	if !ok {
		return nil, fmt.Errorf("pass result without %s", name)
	}
	return a.Data, nil
}

// aggregate implements fedrepAgg.
func (r *remoteUsers) aggregate(ctx context.Context, u []float64, _ int) ([]float64, int, error) {
	q := r.request(pass.UsersGradient, u)
	q.Clip = r.psi
	res, err := r.run(ctx, q)
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
	if r.base.Holdout == 0 {
		return math.NaN(), nil
	}
	res, err := r.run(ctx, r.request(pass.UsersHoldout, u))
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
	q := r.request(pass.UsersGradientHist, u)
	q.Edges = quantileEdges()
	res, err := r.run(ctx, q)
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
	q := r.request(pass.UsersUstatHist, nil)
	q.Edges = quantileEdges()
	res, err := r.run(ctx, q)
	if err != nil {
		return nil, err
	}
	return output(res, "counts")
}

// ustatMean is (1/n) Σ_i clip(Z_i, ψ_init) and the clipped count.
func (r *remoteUsers) ustatMean(ctx context.Context, psi float64) (*mat.SymDense, int, error) {
	q := r.request(pass.UsersUstat, nil)
	q.Clip = psi
	res, err := r.run(ctx, q)
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
// the users in increasing id order; the squared loss).
func (r *remoteUsers) altminStats(ctx context.Context, u []float64, users []int32, cw, cy float64, portion int) (*mat.SymDense, []float64, error) {
	q := r.request(pass.UsersAltMin, u)
	q.Group = make([]float64, r.n)
	for _, i := range users {
		q.Group[i] = 1
	}
	q.Logistic, q.ClipW, q.ClipY, q.Portion = false, cw, cy, portion
	res, err := r.run(ctx, q)
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
// cannot do: the per-user heads (never gathered through the host) and theory
// mode (its per-user random batches would need the users' row counts); the
// SDK refuses a private selection there.
func remotePasses(c *fedrepConfig) ([]string, error) {
	if c.split().OutputV {
		return nil, sdk.BadRequest(headsRefusal)
	}
	if c.theory() {
		return nil, sdk.BadRequest("mode=theory is not available on the remote path (its per-user random batches are drawn on the local rows); use mode=experiment")
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
