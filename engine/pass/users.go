package pass

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/kernel"
)

// The users pass kinds: the aggregates of the personalization estimators
// (plugins/fedrep) over users data, each computed per user after its rows
// are grouped, bounded per user, and summed over users. A user's rows are
// taken in data order (the order of the single-machine reader: file order,
// shards in sorted path order) and split by UserSplit, a rule of the
// user's own row count, so that the pass and the local fit use the same
// rows for the same purpose.
//
// Every users request embeds UsersData (the per-user split, the signs,
// the public projection M and the group of contributing users) and works
// in the dimension d = Proj (or p); the kinds that fit heads also embed
// UsersModel (the representation U, d×Rank, and the loss).
const (
	// UsersUstat is Σ_i clip(Z_i, clip) over the users (d×d, symmetric),
	// Z_i the unbiased U-statistic of w_i w_iᵀ on user i's training rows
	// (UstatTerm); scalar "clipped" counts the users the clip shrank.
	UsersUstat = "users.ustat"
	// UsersUstatHist is the histogram, on the public bin edges of input
	// "edges", of the users' unclipped ‖Z_i‖_F (0 for a user without a
	// term): one count per user.
	UsersUstatHist = "users.ustat_hist"
	// UsersGradient is Σ_i clip(∇_i(U), clip) (d×rank): user i fits its
	// head v_i on its training rows for U and returns the gradient of its
	// mean loss over those rows with respect to U (GradientTerm); scalar
	// "clipped" counts the users the clip shrank. clip 0: no clipping.
	// batch > 0 is theory mode: in round "round" each user takes the rows
	// [2·batch·round, 2·batch·round + 2·batch) of a random order of its
	// training rows (drawn from the public "seed" and the user's index),
	// fits its head on the first batch and takes the gradient on the
	// second; a user without those rows sits the round out (scalar
	// "skipped").
	UsersGradient = "users.gradient"
	// UsersGradientHist is the histogram, on the public edges of input
	// "edges", of the users' unclipped ‖∇_i(U)‖_F (0 for a user without a
	// term).
	UsersGradientHist = "users.gradient_hist"
	// UsersHoldout is the evaluation of U on the users' hold-out rows: each
	// user fits its head on its head rows (head_all 1: training and local
	// rows; 0: the local rows, or the training rows when there are none)
	// and scores its hold-out rows (mean squared error, or mean 0-1 error
	// for the logistic loss); scalars "loss_sum" (the sum of those per-user
	// means) and "loss_users" (the users with hold-out rows). Not bounded
	// and not private: an evaluation output. heads 1 also returns every
	// user's head (output "heads", users×rank, zero rows for non-members):
	// per-user material, served in process only (the pipelines refuse it).
	UsersHoldout = "users.holdout"
	// UsersValidation is the sum over the users of their leave-one-out
	// scores s_i ∈ [0, 1] of U on their head rows (kernel.LeaveOneOut;
	// accuracy 1: the fraction of signs right, 0: 1 − the mean of
	// min(1, squared error); a user with two head rows: their contrast,
	// kernel.Contrast), scalar "score_sum": a user's term moves it by at
	// most 1.
	UsersValidation = "users.validation"
	// UsersAltMin is Priv-AltMin's U-step statistics over the users of one
	// group (input "group", 1×users: 1 for a member, by the user's index
	// in increasing id order): each member fits its head v on its training
	// rows for U, and for its first min(portion, m0) training rows x with
	// W = clip₂(vec(x vᵀ), clip_w) (vec row-major, index p·rank + a) and
	// ỹ = max(−clip_y, min(clip_y, y)) the pass returns
	// a = Σ W Wᵀ (d·rank × d·rank, symmetric) and b = Σ ỹ W (1×d·rank).
	UsersAltMin = "users.altmin"
)

// UsersData are the fields of every users request.
type UsersData struct {
	// LocalFraction and Holdout are the per-user split (UserSplit).
	LocalFraction float64 `pass:"local_fraction"`
	Holdout       float64 `pass:"holdout"`
	// Sign reads the responses as sign(y) (±1 labels).
	Sign bool `pass:"sign"`
	// Proj > 0: the features are the public projection M x (M Proj×p
	// row-major); 0: x.
	Proj int       `pass:"proj"`
	M    []float64 `pass:"m"`
	// Group, when set, is a 0/1 mask over the users (by index in
	// increasing id order): only its members contribute.
	Group []float64 `pass:"group"`
}

// UsersModel is the representation the kinds that fit heads take.
type UsersModel struct {
	U        []float64 `pass:"u"` // d×Rank row-major
	Rank     int       `pass:"rank"`
	Logistic bool      `pass:"loss"` // the logistic loss (else squared)
	// Ridge is the squared-loss heads' relative ridge (kernel.Model.Ridge;
	// 0: least squares, as in the rounds).
	Ridge float64 `pass:"ridge"`
}

// UsersRounds is the theory mode of the gradient kinds (Batch > 0: the
// batch size, the round and the public seed of the users' row orders).
type UsersRounds struct {
	Batch int    `pass:"batch"`
	Round int    `pass:"round"`
	Seed  uint64 `pass:"seed"`
}

// UstatRequest is a UsersUstat request.
type UstatRequest struct {
	UsersData
	Clip float64 `pass:"clip"` // the per-user Frobenius clip (0: none)
}

// UstatHistRequest is a UsersUstatHist request.
type UstatHistRequest struct {
	UsersData
	Edges []float64 `pass:"edges"` // the histogram's public edges
}

// UsersGradientRequest is a UsersGradient request.
type UsersGradientRequest struct {
	UsersData
	UsersModel
	UsersRounds
	Clip float64 `pass:"clip"` // the per-user Frobenius clip (0: none)
}

// GradientHistRequest is a UsersGradientHist request.
type GradientHistRequest struct {
	UsersData
	UsersModel
	UsersRounds
	Edges []float64 `pass:"edges"`
}

// HoldoutRequest is a UsersHoldout request.
type HoldoutRequest struct {
	UsersData
	UsersModel
	HeadAll bool `pass:"head_all"` // heads on the training and local rows
	Heads   bool `pass:"heads"`    // return every user's head (in process only)
}

// ValidationRequest is a UsersValidation request.
type ValidationRequest struct {
	UsersData
	UsersModel
	HeadAll  bool `pass:"head_all"`
	Accuracy bool `pass:"accuracy"` // score signs (else squared error)
}

// AltMinRequest is a UsersAltMin request (the squared loss).
type AltMinRequest struct {
	UsersData
	UsersModel
	ClipW   float64 `pass:"clip_w"`
	ClipY   float64 `pass:"clip_y"`
	Portion int     `pass:"portion"` // rows per member
}

// UsersGradientResult is a UsersGradient result.
type UsersGradientResult struct {
	Records int64
	Sum     []float64 `pass:"sum"` // d×Rank
	Clipped int64     `pass:"clipped"`
	Skipped int64     `pass:"skipped"` // users who sat the round out
}

// HoldoutResult is a UsersHoldout result.
type HoldoutResult struct {
	Records   int64
	LossSum   float64   `pass:"loss_sum"`
	LossUsers int64     `pass:"loss_users"`
	Heads     []float64 `pass:"heads"` // users×Rank, when asked
}

// ScoreResult is a UsersValidation result.
type ScoreResult struct {
	Records  int64
	ScoreSum float64 `pass:"score_sum"`
}

// AltMinResult is a UsersAltMin result.
type AltMinResult struct {
	Records int64
	A       []float64 `pass:"a"` // d·Rank × d·Rank
	B       []float64 `pass:"b"` // 1 × d·Rank
}

// usersResults turn a users kind's total partial sum into its wire
// result, by kind.
var usersResults = map[string]func(c *UsersConfig, a *UsersPartial) *data.PassResult{}

// usersKind completes and registers the users kind k: its data kind, its
// inputs (U when the request has a model, the edges of a histogram, the
// group, the projection), the checks every users request gets before the
// kind's own Check, its reference implementation and its result from the
// total partial sum res.
func usersKind[Q, R any](k *Kind[Q, R], res func(c *UsersConfig, a *UsersPartial) *R) *Kind[Q, R] {
	k.Data = data.Users
	parts := func(q *Q) (u *UsersData, m *UsersModel, r *UsersRounds, e *[]float64) {
		var a any = q
		u = a.(interface{ usersData() *UsersData }).usersData()
		if x, ok := a.(interface{ usersModel() *UsersModel }); ok {
			m = x.usersModel()
		}
		if x, ok := a.(interface{ usersRounds() *UsersRounds }); ok {
			r = x.usersRounds()
		}
		if x, ok := a.(interface{ edges() *[]float64 }); ok {
			e = x.edges()
		}
		return u, m, r, e
	}
	k.Inputs = func(sh *data.Remote, q *Q) []ArraySpec {
		u, m, _, e := parts(q)
		var in []ArraySpec
		if m != nil {
			in = append(in, ArraySpec{Name: "u", Rows: u.dim(sh), Cols: m.Rank, Doc: "the current representation U"})
		}
		if e != nil {
			in = append(in, row("edges", len(*e), "public, strictly increasing, positive bin edges"))
		}
		if u.Group != nil {
			in = append(in, row("group", sh.Users, "1 for the users of the group (index in increasing id order), 0 elsewhere"))
		}
		if u.Proj > 0 {
			in = append(in, ArraySpec{Name: "m", Rows: u.Proj, Cols: sh.P, Doc: "public projection M (k′×p): features are M x"})
		}
		return in
	}
	own := k.Check
	k.Check = func(sh *data.Remote, q *Q) error {
		u, m, r, e := parts(q)
		if err := u.check(sh); err != nil {
			return err
		}
		if m != nil && (m.Rank < 1 || m.Rank > u.dim(sh)) {
			return fmt.Errorf("rank %v is not an integer in [1, %d]", m.Rank, u.dim(sh))
		}
		if m != nil && !(m.Ridge >= 0 && m.Ridge <= 1e6) {
			return fmt.Errorf("ridge %v is not in [0, 10⁶]", m.Ridge)
		}
		if r != nil && (r.Batch < 0 || r.Round < 0) {
			return fmt.Errorf("batch %v and round %v must be non-negative integers", r.Batch, r.Round)
		}
		if e != nil {
			if err := checkGrid(*e); err != nil {
				return err
			}
		}
		if own != nil {
			return own(sh, q)
		}
		return nil
	}
	k.Local = func(ctx context.Context, ds *data.Dataset, q *Q) (*R, error) {
		c := usersConfig(ShapeOf(ds), q)
		a, err := c.local(ctx, ds)
		if err != nil {
			return nil, err
		}
		return res(c, a), nil
	}
	usersResults[k.Name] = func(c *UsersConfig, a *UsersPartial) *data.PassResult {
		return k.EncodeResult(c.sh, c.q.(*Q), res(c, a))
	}
	return register(k)
}

func (u *UsersData) usersData() *UsersData       { return u }
func (m *UsersModel) usersModel() *UsersModel    { return m }
func (r *UsersRounds) usersRounds() *UsersRounds { return r }
func (q *UstatHistRequest) edges() *[]float64    { return &q.Edges }
func (q *GradientHistRequest) edges() *[]float64 { return &q.Edges }

// The users kinds.
var (
	// UsersUstatKind is the kind UsersUstat.
	UsersUstatKind = usersKind(&Kind[UstatRequest, ClippedSumResult]{
		Name: UsersUstat,
		Doc:  "Σ_i clip(Z_i, clip), Z_i = (s sᵀ − Σ_j y_j² x_j x_jᵀ)/(m0(m0−1)) over user i's m0 training rows (s = Σ_j y_j x_j; no term below 2 rows); clip 0: none",
		Outputs: func(sh *data.Remote, q *UstatRequest) []ArraySpec {
			d := q.dim(sh)
			return []ArraySpec{{Name: "sum", Rows: d, Cols: d, Doc: "sum over users of the clipped per-user terms"}}
		},
		Check: func(_ *data.Remote, q *UstatRequest) error { return nonNegative(q.Clip) },
		CheckResult: func(sh *data.Remote, q *UstatRequest, r *ClippedSumResult) error {
			return kernel.CheckUsersSum(r.Sum, q.dim(sh), true, r.Records, float64(r.Clipped), q.Clip)
		},
	}, func(c *UsersConfig, a *UsersPartial) *ClippedSumResult {
		d := c.D
		// Mirror the upper triangle (the terms fill it) so that the sum is
		// exactly symmetric.
		for i := 0; i < d; i++ {
			for j := i + 1; j < d; j++ {
				a.Sum[j*d+i] = a.Sum[i*d+j]
			}
		}
		return &ClippedSumResult{Records: a.Users, Sum: a.Sum, Clipped: a.Clipped}
	})
	// UsersUstatHistKind is the kind UsersUstatHist.
	UsersUstatHistKind = usersKind(&Kind[UstatHistRequest, CountsResult]{
		Name:    UsersUstatHist,
		Doc:     "histogram of the users' unclipped ‖Z_i‖_F on the public edges (one count per user)",
		Outputs: func(_ *data.Remote, q *UstatHistRequest) []ArraySpec { return gridCounts(q.Edges) },
		CheckResult: func(_ *data.Remote, q *UstatHistRequest, r *CountsResult) error {
			return kernel.CheckNormCounts(r.Counts, q.members(r.Records))
		},
	}, countsOf)
	// UsersGradientKind is the kind UsersGradient.
	UsersGradientKind = usersKind(&Kind[UsersGradientRequest, UsersGradientResult]{
		Name: UsersGradient,
		Doc:  "Σ_i clip(g_i v_iᵀ, clip): v_i the head user i fits on its training rows for U, g_i v_iᵀ the gradient in U of its mean loss over those rows; clip 0: none",
		Outputs: func(sh *data.Remote, q *UsersGradientRequest) []ArraySpec {
			return []ArraySpec{{Name: "sum", Rows: q.dim(sh), Cols: q.Rank, Doc: "sum over users of the clipped per-user terms"}}
		},
		Check: func(_ *data.Remote, q *UsersGradientRequest) error { return nonNegative(q.Clip) },
		CheckResult: func(sh *data.Remote, q *UsersGradientRequest, r *UsersGradientResult) error {
			return kernel.CheckUsersSum(r.Sum, q.dim(sh), false, r.Records, float64(r.Clipped), q.Clip)
		},
	}, func(c *UsersConfig, a *UsersPartial) *UsersGradientResult {
		return &UsersGradientResult{Records: a.Users, Sum: a.Sum, Clipped: a.Clipped, Skipped: a.Skipped}
	})
	// UsersGradientHistKind is the kind UsersGradientHist.
	UsersGradientHistKind = usersKind(&Kind[GradientHistRequest, CountsResult]{
		Name:    UsersGradientHist,
		Doc:     "histogram of the users' unclipped gradient norms ‖g_i v_iᵀ‖_F at U on the public edges (one count per user)",
		Outputs: func(_ *data.Remote, q *GradientHistRequest) []ArraySpec { return gridCounts(q.Edges) },
		CheckResult: func(_ *data.Remote, q *GradientHistRequest, r *CountsResult) error {
			return kernel.CheckNormCounts(r.Counts, q.members(r.Records))
		},
	}, countsOf)
	// UsersAltMinKind is the kind UsersAltMin.
	UsersAltMinKind = usersKind(&Kind[AltMinRequest, AltMinResult]{
		Name: UsersAltMin,
		Doc:  "Priv-AltMin U-step statistics of the group's users: a = Σ W Wᵀ, b = Σ ỹ W over each member's first portion training rows, W = clip₂(vec(x vᵀ), clip_w), ỹ = clip(y, clip_y)",
		Outputs: func(sh *data.Remote, q *AltMinRequest) []ArraySpec {
			dk := q.dim(sh) * q.Rank
			return []ArraySpec{{Name: "a", Rows: dk, Cols: dk, Doc: "Σ W Wᵀ"}, {Name: "b", Rows: 1, Cols: dk, Doc: "Σ ỹ W"}}
		},
		Check: func(sh *data.Remote, q *AltMinRequest) error {
			switch dk := q.dim(sh) * q.Rank; {
			case q.Logistic:
				return fmt.Errorf("the Priv-AltMin statistics use the squared loss (loss 0)")
			case !(q.ClipW > 0) || !(q.ClipY > 0):
				return fmt.Errorf("clip_w %v and clip_y %v must be positive", q.ClipW, q.ClipY)
			case q.Portion < 1 || q.Portion > 1e6:
				return fmt.Errorf("portion %v is not an integer in [1, 10⁶]", q.Portion)
			case dk > 4096:
				return fmt.Errorf("d·rank = %d exceeds 4096", dk)
			}
			return nil
		},
		CheckResult: func(sh *data.Remote, q *AltMinRequest, r *AltMinResult) error {
			return kernel.CheckAltMin(r.A, r.B, q.dim(sh)*q.Rank, float64(q.members(r.Records)), float64(q.Portion), q.ClipW, q.ClipY)
		},
	}, func(c *UsersConfig, a *UsersPartial) *AltMinResult {
		am, b := kernel.AltMinA(a.Sum, c.D, c.Rank)
		return &AltMinResult{Records: a.Users, A: am, B: b}
	})
	// UsersHoldoutKind is the kind UsersHoldout.
	UsersHoldoutKind = usersKind(&Kind[HoldoutRequest, HoldoutResult]{
		Name: UsersHoldout,
		Doc:  "evaluation of U on the hold-out rows: Σ over users with hold-out rows of their mean hold-out loss (loss_sum) and their number (loss_users); not private",
		Outputs: func(sh *data.Remote, q *HoldoutRequest) []ArraySpec {
			if !q.Heads {
				return nil
			}
			return []ArraySpec{{Name: "heads", Rows: sh.Users, Cols: q.Rank, Doc: "row i: user i's head (zero for a non-member)"}}
		},
		CheckResult: func(_ *data.Remote, q *HoldoutRequest, r *HoldoutResult) error {
			return kernel.CheckHoldout(r.LossSum, float64(r.LossUsers), r.Records, q.Logistic)
		},
	}, func(c *UsersConfig, a *UsersPartial) *HoldoutResult {
		return &HoldoutResult{Records: a.Users, LossSum: a.LossSum, LossUsers: a.LossUsers, Heads: c.heads}
	})
	// UsersValidationKind is the kind UsersValidation.
	UsersValidationKind = usersKind(&Kind[ValidationRequest, ScoreResult]{
		Name:    UsersValidation,
		Doc:     "Σ over users of their leave-one-out scores s_i ∈ [0, 1] of U on their head rows (score_sum)",
		Outputs: func(*data.Remote, *ValidationRequest) []ArraySpec { return nil },
		CheckResult: func(_ *data.Remote, q *ValidationRequest, r *ScoreResult) error {
			if v := r.ScoreSum; !(v >= 0 && v <= float64(q.members(r.Records))) {
				return fmt.Errorf("score_sum %v is outside [0, users]", v)
			}
			return nil
		},
	}, func(c *UsersConfig, a *UsersPartial) *ScoreResult {
		return &ScoreResult{Records: a.Users, ScoreSum: a.LossSum}
	})
)

// countsOf is the result of the histogram kinds.
func countsOf(_ *UsersConfig, a *UsersPartial) *CountsResult {
	return &CountsResult{Records: a.Users, Counts: a.Sum}
}

// dim is the working dimension of a users request: Proj, or p.
func (u *UsersData) dim(sh *data.Remote) int {
	if u.Proj > 0 {
		return u.Proj
	}
	return sh.P
}

// members is the number of users a request aggregates: the group's
// members, or every user.
func (u *UsersData) members(users int64) int64 {
	if u.Group == nil {
		return users
	}
	var m int64
	for _, v := range u.Group {
		if v == 1 {
			m++
		}
	}
	return m
}

// check checks the common fields.
func (u *UsersData) check(sh *data.Remote) error {
	switch {
	case u.LocalFraction < 0 || u.LocalFraction > 0.9 || u.Holdout < 0 || u.Holdout > 0.9:
		return fmt.Errorf("local_fraction %v or holdout %v is outside [0, 0.9]", u.LocalFraction, u.Holdout)
	case u.Proj < 0 || u.Proj > sh.P:
		return fmt.Errorf("proj %v is not an integer in [0, %d]", u.Proj, sh.P)
	}
	for _, v := range u.Group {
		if v != 0 && v != 1 {
			return fmt.Errorf("group holds %v, not 0 or 1", v)
		}
	}
	return nil
}

// UserSplit is the per-user split of the personalization estimators: of a
// user's m rows (in data order) the last ⌊holdout·m⌋ are held out for
// evaluation; of the rest, the last ⌊localFraction·rest⌋ form the local
// part S¹ and the first m0 the training part S⁰. It returns m0 and rest
// (training rows [0, m0), local rows [m0, rest), hold-out rows [rest, m)).
// It depends on the user's own row count only.
func UserSplit(m int, localFraction, holdout float64) (m0, rest int) {
	h := int(math.Floor(holdout * float64(m)))
	rest = m - h
	l := int(math.Floor(localFraction * float64(rest)))
	return rest - l, rest
}

// User is one user's rows in data order: X[j] the features of row j (p
// values, not modified), Y[j] its response.
type User struct {
	X [][]float64
	Y []float64
	// Index is the user's position in increasing user-id order (used by
	// the kinds that take a group of users).
	Index int
}

// UsersConfig is a decoded users request of any users kind (the fields
// the kind does not take are zero) with the data's dimension p and the
// working dimension D (Proj, or p): both pass.Local and the Beam pipelines
// compute every per-user term through it, so that they agree up to the
// order of the sum over users.
type UsersConfig struct {
	Kind string
	UsersData
	UsersModel
	UsersRounds
	Clip                     float64 // the per-user clip (+Inf: none)
	Edges                    []float64
	HeadAll, Heads, Accuracy bool
	ClipW, ClipY             float64
	Portion                  int
	P, D                     int
	// heads, when Heads is set, receives every member's head (row Index,
	// users×Rank): the in-process runner's output of users.holdout.
	heads []float64
	sh    *data.Remote
	q     any
}

// UsersConfigOf decodes and validates a users request for data of shape
// sh.
func UsersConfigOf(sh *data.Remote, req data.PassRequest) (*UsersConfig, error) {
	if _, ok := usersResults[req.Kind]; !ok {
		return nil, fmt.Errorf("%q is not a users pass", req.Kind)
	}
	q, err := specs[req.Kind].decode(sh, req)
	if err != nil {
		return nil, err
	}
	return usersConfig(sh, q), nil
}

// usersConfig returns the config of the typed users request q.
func usersConfig(sh *data.Remote, q any) *UsersConfig {
	c := &UsersConfig{P: sh.P, sh: sh, q: q}
	clip := 0.0
	switch q := q.(type) {
	case *UstatRequest:
		c.Kind, c.UsersData, clip = UsersUstat, q.UsersData, q.Clip
	case *UstatHistRequest:
		c.Kind, c.UsersData, c.Edges = UsersUstatHist, q.UsersData, q.Edges
	case *UsersGradientRequest:
		c.Kind, c.UsersData, c.UsersModel, c.UsersRounds, clip = UsersGradient, q.UsersData, q.UsersModel, q.UsersRounds, q.Clip
	case *GradientHistRequest:
		c.Kind, c.UsersData, c.UsersModel, c.UsersRounds, c.Edges = UsersGradientHist, q.UsersData, q.UsersModel, q.UsersRounds, q.Edges
	case *HoldoutRequest:
		c.Kind, c.UsersData, c.UsersModel, c.HeadAll, c.Heads = UsersHoldout, q.UsersData, q.UsersModel, q.HeadAll, q.Heads
	case *ValidationRequest:
		c.Kind, c.UsersData, c.UsersModel, c.HeadAll, c.Accuracy = UsersValidation, q.UsersData, q.UsersModel, q.HeadAll, q.Accuracy
	case *AltMinRequest:
		c.Kind, c.UsersData, c.UsersModel, c.ClipW, c.ClipY, c.Portion = UsersAltMin, q.UsersData, q.UsersModel, q.ClipW, q.ClipY, q.Portion
	}
	c.Clip, c.D = math.Inf(1), c.dim(sh)
	if clip > 0 {
		c.Clip = clip
	}
	if c.Heads {
		c.heads = make([]float64, sh.Users*c.Rank)
	}
	return c
}

// UsersPartial is a partial sum of per-user terms: what a combiner
// accumulates. Sum is the clipped-term sum (or the histogram counts).
type UsersPartial struct {
	Users     int64
	Clipped   int64
	Skipped   int64
	Sum       []float64
	LossSum   float64
	LossUsers int64
}

// NewPartial returns an empty partial sum for c.
func (c *UsersConfig) NewPartial() *UsersPartial {
	n := 0
	switch c.Kind {
	case UsersUstat:
		n = c.D * c.D
	case UsersGradient:
		n = c.D * c.Rank
	case UsersUstatHist, UsersGradientHist:
		n = len(c.Edges) + 1
	case UsersAltMin:
		n = kernel.AltMinSize(c.D, c.Rank)
	}
	return &UsersPartial{Sum: make([]float64, n)}
}

// Merge adds o into a.
func (a *UsersPartial) Merge(o *UsersPartial) {
	a.Users += o.Users
	a.Clipped += o.Clipped
	a.Skipped += o.Skipped
	if len(a.Sum) < len(o.Sum) { // a decoded empty partial
		a.Sum = append(a.Sum, make([]float64, len(o.Sum)-len(a.Sum))...)
	}
	for i, v := range o.Sum {
		a.Sum[i] += v
	}
	a.LossSum += o.LossSum
	a.LossUsers += o.LossUsers
}

// UserScratch is one worker's buffers for UsersConfig.Add, reused across
// users (a nil scratch allocates per user).
type UserScratch struct {
	ks           kernel.Scratch
	x, px        [][]float64 // the user's rows, its projected rows
	w, y         []float64   // projected features, signed responses
	prefix, prod []float64   // the U-statistic's
	perm         []int       // theory mode: the user's row order
	vx, gx       [][]float64
	vy, gy       []float64
	pcg          rand.PCG
	// users.ustat stacks the scaled rows f·ã_j in bp and r_j in bq (brows
	// rows) and adds them to the sum by one product bpᵀ bq (flushUstat):
	// per user, or per block of users when blocked (the in-process runner).
	blocked bool
	bp, bq  []float64
	brows   int
}

// grow returns b resized to n (reallocated when too small).
func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

// batches returns the rows user u fits its head on and the rows of its
// gradient: its training rows, or in theory mode the round's two batches
// of its random row order (none when its training rows cannot feed them).
func (c *UsersConfig) batches(s *UserScratch, index int, x [][]float64, y []float64) (vx [][]float64, vy []float64, gx [][]float64, gy []float64) {
	if c.Batch == 0 {
		return x, y, x, y
	}
	b, t := c.Batch, c.Round
	if 2*b*(t+1) > len(y) {
		return nil, nil, nil, nil
	}
	s.perm = grow(s.perm, len(y))
	for j := range s.perm {
		s.perm[j] = j
	}
	s.pcg.Seed(c.Seed, uint64(index))
	rand.New(&s.pcg).Shuffle(len(s.perm), func(i, j int) { s.perm[i], s.perm[j] = s.perm[j], s.perm[i] })
	s.vx, s.vy, s.gx, s.gy = grow(s.vx, b), grow(s.vy, b), grow(s.gx, b), grow(s.gy, b)
	for j := 0; j < b; j++ {
		rv, rg := s.perm[2*b*t+j], s.perm[2*b*t+b+j]
		s.vx[j], s.vy[j], s.gx[j], s.gy[j] = x[rv], y[rv], x[rg], y[rg]
	}
	return s.vx, s.vy, s.gx, s.gy
}

// Add adds user u's bounded term to a; s is the caller's scratch (nil:
// fresh buffers).
func (c *UsersConfig) Add(a *UsersPartial, u User, s *UserScratch) {
	a.Users++
	if c.Group != nil && (u.Index < 0 || u.Index >= len(c.Group) || c.Group[u.Index] != 1) {
		return
	}
	if s == nil {
		s = &UserScratch{}
	}
	x, y := c.features(u, s)
	m0, rest := UserSplit(len(y), c.LocalFraction, c.Holdout)
	m := kernel.Model{U: c.U, D: c.D, K: c.Rank, Logistic: c.Logistic, Ridge: c.Ridge}
	switch c.Kind {
	case UsersUstat, UsersUstatHist:
		// The term f·Σ_j ã_j r_jᵀ: its rows are stacked in bp and bq and
		// summed by one product, per user or (blocked) per block of users.
		d := c.D
		s.prefix, s.prod = grow(s.prefix, d), grow(s.prod, d*d)
		if (s.brows+m0)*d > len(s.bp) {
			c.flushUstat(a, s)
			n := m0 * d
			if s.blocked {
				n = max(n, 2048*d)
			}
			if len(s.bp) < n {
				s.bp, s.bq = make([]float64, n), make([]float64, n)
			}
		}
		at, rt := s.bp[s.brows*d:(s.brows+m0)*d], s.bq[s.brows*d:(s.brows+m0)*d]
		f, z, clipped, ok := kernel.Ustat(x, y[:m0], d, c.Clip, at, rt, s.prefix, s.prod)
		if c.Kind == UsersUstatHist {
			a.Sum[kernel.Cell(c.Edges, z)]++
			return
		}
		if !ok {
			return
		}
		if clipped {
			a.Clipped++
		}
		for i := range at {
			at[i] *= f
		}
		s.brows += m0
		if !s.blocked {
			c.flushUstat(a, s)
		}
	case UsersGradient, UsersGradientHist:
		vx, vy, gx, gy := c.batches(s, u.Index, x[:m0], y[:m0])
		if len(gy) == 0 {
			a.Skipped++
			if c.Kind == UsersGradientHist {
				a.Sum[0]++
			}
			return
		}
		g, v := s.ks.UserGradient(m, vx, vy, gx, gy)
		if c.Kind == UsersGradientHist {
			a.Sum[kernel.Cell(c.Edges, kernel.OuterNorm(g, v))]++
		} else if kernel.AddClippedOuter(a.Sum, g, v, c.Clip) {
			a.Clipped++
		}
	case UsersAltMin:
		s.ks.AddAltMin(m, x[:m0], y[:m0], c.ClipW, c.ClipY, c.Portion, a.Sum)
	case UsersHoldout:
		if rest == len(y) && c.heads == nil {
			return
		}
		lo, hi := kernel.HeadRows(m0, rest, c.HeadAll)
		v := s.ks.Head(m, x[lo:hi], y[lo:hi])
		if c.heads != nil {
			copy(c.heads[u.Index*c.Rank:(u.Index+1)*c.Rank], v)
		}
		if rest < len(y) {
			a.LossSum += s.ks.MeanLoss(m, v, x[rest:], y[rest:])
			a.LossUsers++
		}
	case UsersValidation:
		lo, hi := kernel.HeadRows(m0, rest, c.HeadAll)
		a.LossSum += s.ks.LeaveOneOut(m, x[lo:hi], y[lo:hi], c.Accuracy)
	}
}

// flushUstat adds the stacked rows' product bpᵀ bq to the sum (d×d; its
// upper triangle is what Result reads).
func (c *UsersConfig) flushUstat(a *UsersPartial, s *UserScratch) {
	if s.brows == 0 {
		return
	}
	d := c.D
	blas64.Gemm(blas.Trans, blas.NoTrans, 1,
		blas64.General{Rows: s.brows, Cols: d, Stride: d, Data: s.bp[:s.brows*d]},
		blas64.General{Rows: s.brows, Cols: d, Stride: d, Data: s.bq[:s.brows*d]},
		1, blas64.General{Rows: d, Cols: d, Stride: d, Data: a.Sum})
	s.brows = 0
}

// Result turns the total partial sum into the pass's wire result.
func (c *UsersConfig) Result(a *UsersPartial) *data.PassResult { return usersResults[c.Kind](c, a) }

// local aggregates every user of an in-memory data set: the users in
// fixed contiguous chunks (a function of the number of users and the size
// of a partial sum only), the chunks on a pool of workers with one scratch
// each, and the chunks' partial sums added in chunk order, so that the
// result does not depend on the number of threads.
func (c *UsersConfig) local(ctx context.Context, ds *data.Dataset) (*UsersPartial, error) {
	if len(ds.UserStart) < 2 || ds.X == nil || len(ds.Y) != ds.N() {
		return nil, fmt.Errorf("the data set holds no users rows")
	}
	n := len(ds.UserStart) - 1
	size := len(c.NewPartial().Sum)
	chunks := max(1, min(n, 64, int(4e6/float64(size+1))))
	parts := make([]*UsersPartial, chunks)
	scratch := make([]UserScratch, kernel.Workers(chunks))
	for w := range scratch {
		scratch[w].blocked = true
	}
	err := kernel.ParallelChunks(ctx, chunks, func(w, ch int) {
		s := &scratch[w]
		a := c.NewPartial()
		lo, hi := ch*n/chunks, (ch+1)*n/chunks
		for g := lo; g < hi; g++ {
			r0, r1 := ds.UserStart[g], ds.UserStart[g+1]
			s.x = grow(s.x, r1-r0)
			for i := r0; i < r1; i++ {
				s.x[i-r0] = ds.X.RawRowView(i)
			}
			c.Add(a, User{X: s.x, Y: ds.Y[r0:r1], Index: g}, s)
		}
		c.flushUstat(a, s)
		parts[ch] = a
	})
	if err != nil {
		return nil, err
	}
	for _, p := range parts[1:] {
		parts[0].Merge(p)
	}
	return parts[0], nil
}

// features returns the user's working features (projected when the
// request carries M) and responses (signs when asked), in s's buffers or
// as views of u.
func (c *UsersConfig) features(u User, s *UserScratch) ([][]float64, []float64) {
	x := u.X
	if c.M != nil {
		s.w, s.px = grow(s.w, len(u.X)*c.D), grow(s.px, len(u.X))
		x = s.px
		for j, r := range u.X {
			w := s.w[j*c.D : (j+1)*c.D]
			for a := range w {
				mr := c.M[a*c.P : (a+1)*c.P]
				var t float64
				for q, v := range r {
					t += mr[q] * v
				}
				w[a] = t
			}
			x[j] = w
		}
	}
	y := u.Y
	if c.Sign {
		s.y = grow(s.y, len(u.Y))
		y = s.y
		for j, v := range u.Y {
			y[j] = -1
			if v > 0 {
				y[j] = 1
			}
		}
	}
	return x, y
}
