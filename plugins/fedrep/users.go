package fedrep

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/sdk"
)

// The one data path of the FedRep estimators (DERIVATIONS.md §14): every
// statistic a fit reads from the users' rows comes back from a users pass
// (engine/pass/users.go), computed per user, bounded per user and summed
// over users. For a data set in memory the passes are served in process
// (pass.Local); for one held in shards, by its pass runner (the Beam
// path); the privacy steps are the same either way.

// lossKind selects the per-sample loss of the FedRep rounds.
type lossKind int

const (
	// lossSquared is (y − ⟨x, Uv⟩)², the regression loss of Private FedRep.
	lossSquared lossKind = iota
	// lossLogistic is log(1 + exp(−y⟨x, Uv⟩)) for ±1 labels (the smooth
	// surrogate of DERIVATIONS.md §6).
	lossLogistic
)

// usersData reaches a users data set through passes: the public shape,
// the split, feature and loss fields every request carries, the users
// that contribute, and the current clip, rank and theory-mode batches.
type usersData struct {
	ds       *data.Dataset
	total    int            // users in the data set
	n, d     int            // contributing users, working dimension
	base     pass.UsersData // the split, the signs, the projection
	logistic bool
	headAll  bool // heads on the training and local rows
	// ridge and roundRidge are the relative ridges of the users' final
	// heads and of their heads inside the rounds (head_ridge,
	// round_ridge; kernel.Model.Ridge).
	ridge, roundRidge float64
	k                 int
	psi               float64 // +Inf: no clipping
	batch             int     // theory mode: rows per batch (0: experiment mode)
	seed              uint64  // theory mode: the public seed of the users' row orders
	skip              int     // users who sat out the last round
}

// newUsersData reads the public shape of a users data set, in memory or
// remote. ridges are the squared-loss heads' ridges (nil: none); back is
// the map back from a public projection (Mᵀ, p×k′), nil without one.
func newUsersData(ds *data.Dataset, sp *splitOptions, ridges *ridgeOptions, back *mat.Dense, loss lossKind) (*usersData, error) {
	if ds == nil || ds.Kind != data.Users {
		return nil, fmt.Errorf("need a users data set")
	}
	sh := ds.Remote
	if sh == nil {
		if err := ds.Validate(); err != nil {
			return nil, fmt.Errorf("invalid data: %w", err)
		}
		if len(ds.Y) != ds.N() {
			return nil, fmt.Errorf("%d rows but %d responses", ds.N(), len(ds.Y))
		}
		sh = pass.ShapeOf(ds)
	} else if sh.Passer == nil {
		return nil, fmt.Errorf("the data set holds no rows and no pass runner")
	}
	if sh.Users < 1 {
		return nil, fmt.Errorf("data set has no users")
	}
	logistic := loss == lossLogistic
	ud := &usersData{ds: ds, total: sh.Users, n: sh.Users, d: sh.P, psi: math.Inf(1), logistic: logistic, headAll: sp.headAll(),
		base: pass.UsersData{LocalFraction: sp.LocalFraction, Holdout: sp.Holdout, Sign: logistic}}
	if ridges != nil {
		ud.ridge, ud.roundRidge = ridges.HeadRidge, ridges.RoundRidge
	}
	if back != nil {
		p, kp := back.Dims()
		if p != sh.P {
			return nil, fmt.Errorf("projection for %d features, the data has %d", p, sh.P)
		}
		ud.base.M, ud.base.Proj = mat.DenseCopyOf(back.T()).RawMatrix().Data, kp
		ud.d = kp
	}
	return ud, nil
}

// model returns the representation fields of a request at U for the
// rounds and the statistics fitted inside them.
func (r *usersData) model(u []float64) pass.UsersModel {
	return pass.UsersModel{U: u, Rank: r.k, Logistic: r.logistic, Ridge: r.roundRidge}
}

// headModel is model with the final heads' ridge: the heads users keep,
// score candidates with and are evaluated by (DERIVATIONS.md §3.7).
func (r *usersData) headModel(u []float64) pass.UsersModel {
	m := r.model(u)
	m.Ridge = r.ridge
	return m
}

// wireClip is the clip ψ as a request carries it (0: none).
func (r *usersData) wireClip() float64 {
	if math.IsInf(r.psi, 1) {
		return 0
	}
	return r.psi
}

// theory sets the rounds' batches: theory mode with batch rows and the
// public seed of the users' row orders, or experiment mode (batch 0).
func (r *usersData) theory(batch int, seed uint64) { r.batch, r.seed = batch, seed }

// rounds returns round t's theory-mode fields (none in experiment mode).
func (r *usersData) rounds(t int) pass.UsersRounds {
	if r.batch > 0 {
		return pass.UsersRounds{Batch: r.batch, Round: t, Seed: r.seed}
	}
	return pass.UsersRounds{}
}

// aggregate returns Σ_i clip(∇_i(U), ψ) (d×k) over round t's rows and the
// number of users whose gradient was clipped.
func (r *usersData) aggregate(ctx context.Context, u []float64, t int) ([]float64, int, error) {
	res, err := pass.UsersGradientKind.Run(ctx, r.ds, pass.UsersGradientRequest{UsersData: r.base, UsersModel: r.model(u), UsersRounds: r.rounds(t), Clip: r.wireClip()})
	if err != nil {
		return nil, 0, err
	}
	r.skip = int(res.Skipped)
	return res.Sum, int(res.Clipped), nil
}

// skipped is the number of users who sat out the last round.
func (r *usersData) skipped() int { return r.skip }

// fitHeads fits the heads for U (into heads, users×k, when not nil) and
// returns the mean hold-out loss (NaN without hold-out rows).
func (r *usersData) fitHeads(ctx context.Context, u []float64, heads *mat.Dense) (float64, error) {
	if heads == nil && r.base.Holdout == 0 {
		return math.NaN(), nil
	}
	res, err := pass.UsersHoldoutKind.Run(ctx, r.ds, pass.HoldoutRequest{UsersData: r.base, UsersModel: r.headModel(u), HeadAll: r.headAll, Heads: heads != nil})
	if err != nil {
		return 0, err
	}
	if heads != nil {
		copy(heads.RawMatrix().Data, res.Heads)
	}
	if res.LossUsers == 0 {
		return math.NaN(), nil
	}
	return res.LossSum / float64(res.LossUsers), nil
}

// gradHist is the histogram of the users' gradient norms at U (round 0's
// rows) on kernel.DefaultGrid, which clip.PrivateNorm reads (replacing a
// user moves each count by at most one; DERIVATIONS.md §12).
func (r *usersData) gradHist(ctx context.Context, u []float64) ([]float64, error) {
	res, err := pass.UsersGradientHistKind.Run(ctx, r.ds, pass.GradientHistRequest{UsersData: r.base, UsersModel: r.model(u), UsersRounds: r.rounds(0), Edges: kernel.DefaultGrid()})
	if err != nil {
		return nil, err
	}
	return res.Counts, nil
}

// ustatHist is the histogram of the users' unclipped ‖Z_i‖_F on
// kernel.DefaultGrid.
func (r *usersData) ustatHist(ctx context.Context) ([]float64, error) {
	res, err := pass.UsersUstatHistKind.Run(ctx, r.ds, pass.UstatHistRequest{UsersData: r.base, Edges: kernel.DefaultGrid()})
	if err != nil {
		return nil, err
	}
	return res.Counts, nil
}

// ustatMean is (1/n) Σ_i clip(Z_i, ψ_init) and the clipped count.
func (r *usersData) ustatMean(ctx context.Context, psi float64) (*mat.SymDense, int, error) {
	if math.IsInf(psi, 1) {
		psi = 0
	}
	res, err := pass.UsersUstatKind.Run(ctx, r.ds, pass.UstatRequest{UsersData: r.base, Clip: psi})
	if err != nil {
		return nil, 0, err
	}
	sum := res.Sum
	inv := 1 / float64(r.n)
	for i := range sum {
		sum[i] *= inv
	}
	return mat.NewSymDense(r.d, sum), int(res.Clipped), nil
}

// altminStats returns Priv-AltMin's U-step statistics A (dk×dk) and b of
// the listed users through a users.altmin pass (the group as a mask over
// the users in increasing id order; the squared loss).
func (r *usersData) altminStats(ctx context.Context, u []float64, users []int32, cw, cy float64, portion int) (*mat.SymDense, []float64, error) {
	q := pass.AltMinRequest{UsersData: r.base, UsersModel: r.model(u), ClipW: cw, ClipY: cy, Portion: portion}
	q.Group = make([]float64, r.total)
	for _, i := range users {
		q.Group[i] = 1
	}
	q.Logistic = false
	res, err := pass.UsersAltMinKind.Run(ctx, r.ds, q)
	if err != nil {
		return nil, nil, err
	}
	return mat.NewSymDense(r.d*r.k, res.A), res.B, nil
}

// validationScore returns (1/n) Σ_i s_i with s_i ∈ [0, 1] user i's
// leave-one-out score for U (rank k) on the rows its final head is fitted
// on (S⁰ ∪ S¹, or S¹ alone with head_data=local; S⁰ when S¹ is empty):
// for each of those m rows in turn, the head is fitted on the other m − 1
// rows and the held-back row is predicted; s_i is the fraction of signs
// predicted right (accuracy) or 1 − the mean of min(1, squared error)
// (squared). The head of each fold sees one row fewer than the final
// head, so the score ranks candidates as the final heads will be judged
// on new rows (a split into halves would fit the heads on half the rows,
// which favours small ranks). A user with exactly 2 such rows scores
// instead the cosine between their difference and span(U) (0 when their
// labels agree): a head fitted on one row predicts the other's label by
// the sign of one inner product, which ranks candidates by nothing the
// final two-row head uses (DERIVATIONS.md §13, users with two rows). A
// user with fewer than 2 such rows, or whose
// computation is not finite, scores 0. Each s_i depends on user i's rows
// (and U) only, so the score moves by at most 1/n when one user is
// replaced (DERIVATIONS.md §13).
func (r *usersData) validationScore(ctx context.Context, u []float64, k int, headAll, accuracy bool) (float64, error) {
	m := r.headModel(u)
	m.Rank = k
	res, err := pass.UsersValidationKind.Run(ctx, r.ds, pass.ValidationRequest{UsersData: r.base, UsersModel: m, HeadAll: headAll, Accuracy: accuracy})
	if err != nil {
		return 0, err
	}
	return res.ScoreSum / float64(r.n), nil
}

// headsRefusal is the refusal of per-user heads on the remote path.
const headsRefusal = "output_v=true: the per-user heads v_i are not gathered through the host on the remote path (each user fits its own head from the released U, e.g. with dplr transform); set output_v=false to release U alone (DERIVATIONS.md §14)"

// remotePasses returns the pass kinds a FedRep-type fit with options opts
// requests, or refuses, from the options alone, what the remote path does
// not do: gather the per-user heads through the host (DERIVATIONS.md §14).
func remotePasses(opts any) ([]string, error) {
	o, ok := opts.(interface{ config() *fedrepConfig })
	if !ok {
		return nil, fmt.Errorf("internal error: options of type %T", opts)
	}
	c := o.config()
	if c.split().OutputV {
		return nil, sdk.BadRequest(headsRefusal)
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

// rounds gives the FedRep-type estimators (fedrep-private, its
// non-private reference and fedrep-classify) their transform and remote
// path.
type rounds struct{ personal }

// Passes implements sdk.RemoteEstimator.
func (rounds) Passes(opts any, _ sdk.Shape) ([]string, error) { return remotePasses(opts) }

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
