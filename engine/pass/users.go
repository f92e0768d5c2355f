package pass

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"

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
// Every users kind takes the parameters
//
//	local_fraction, holdout  the per-user split (UserSplit)
//	sign                     1: responses are read as sign(y) (±1 labels), 0: as given
//	proj                     k′ > 0: features are the public projection M x (input "m", k′×p); 0: x
//	grouped                  1: only the users of input "group" (1×users, 1 for a member by the
//	                         user's index in increasing id order) contribute; 0: every user
//
// (the histogram kinds also take bins, the length of their input "edges")
// and works in the dimension d = proj (or p). The kinds that take the
// representation U also take rank (U is the d×rank input "u") and loss
// (0: squared, 1: logistic).
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

// usersCommon are the parameters every users kind takes.
var usersCommon = []string{"local_fraction", "holdout", "sign", "proj", "grouped"}

func init() {
	withU := append(append([]string{}, usersCommon...), "rank", "loss")
	sumOut := func(cols func(sh *data.Remote, req data.PassRequest) (int, int)) func(sh *data.Remote, req data.PassRequest) []ArraySpec {
		return func(sh *data.Remote, req data.PassRequest) []ArraySpec {
			r, c := cols(sh, req)
			return []ArraySpec{{Name: "sum", Rows: r, Cols: c, Doc: "sum over users of the clipped per-user terms"}}
		}
	}
	histOut := func(sh *data.Remote, req data.PassRequest) []ArraySpec {
		return []ArraySpec{{Name: "counts", Rows: 1, Cols: int(req.Params["bins"]) + 1, Doc: "users per bin: bin 0 ≤ edges[0], bin j ∈ (edges[j−1], edges[j]], the last above the largest edge"}}
	}
	records := func(sh *data.Remote) int64 { return int64(sh.Users) }
	register(Spec{
		Kind: UsersUstat, Data: data.Users,
		Doc:    "Σ_i clip(Z_i, clip), Z_i = (s sᵀ − Σ_j y_j² x_j x_jᵀ)/(m0(m0−1)) over user i's m0 training rows (s = Σ_j y_j x_j; no term below 2 rows); clip 0: none",
		Params: append(append([]string{}, usersCommon...), "clip"),
		Inputs: func(sh *data.Remote, p map[string]float64) []ArraySpec { return projInputs(sh, p, nil) },
		Outputs: sumOut(func(sh *data.Remote, req data.PassRequest) (int, int) {
			d := workDim(sh, req.Params)
			return d, d
		}),
		Scalars:      []string{"clipped"},
		Records:      records,
		CheckRequest: checkUsersRequest,
		CheckResult:  checkUsersSum(true),
		Local:        usersLocal,
	})
	register(Spec{
		Kind: UsersUstatHist, Data: data.Users,
		Doc:    "histogram of the users' unclipped ‖Z_i‖_F on the public edges (one count per user)",
		Params: append(append([]string{}, usersCommon...), "bins"),
		Inputs: func(sh *data.Remote, p map[string]float64) []ArraySpec {
			return projInputs(sh, p, []ArraySpec{edgesSpec(p)})
		},
		Outputs:      histOut,
		Records:      records,
		CheckRequest: checkUsersRequest,
		CheckResult:  checkUsersHist,
		Local:        usersLocal,
	})
	register(Spec{
		Kind: UsersGradient, Data: data.Users,
		Doc:    "Σ_i clip(g_i v_iᵀ, clip): v_i the head user i fits on its training rows for U, g_i v_iᵀ the gradient in U of its mean loss over those rows; clip 0: none",
		Params: append(append([]string{}, withU...), "clip", "batch", "round", "seed"),
		Inputs: func(sh *data.Remote, p map[string]float64) []ArraySpec { return uInputs(sh, p, nil) },
		Outputs: sumOut(func(sh *data.Remote, req data.PassRequest) (int, int) {
			return workDim(sh, req.Params), int(req.Params["rank"])
		}),
		Scalars:      []string{"clipped", "skipped"},
		Records:      records,
		CheckRequest: checkUsersRequest,
		CheckResult:  checkUsersSum(false),
		Local:        usersLocal,
	})
	register(Spec{
		Kind: UsersGradientHist, Data: data.Users,
		Doc:    "histogram of the users' unclipped gradient norms ‖g_i v_iᵀ‖_F at U on the public edges (one count per user)",
		Params: append(append([]string{}, withU...), "bins", "batch", "round", "seed"),
		Inputs: func(sh *data.Remote, p map[string]float64) []ArraySpec {
			return uInputs(sh, p, []ArraySpec{edgesSpec(p)})
		},
		Outputs:      histOut,
		Records:      records,
		CheckRequest: checkUsersRequest,
		CheckResult:  checkUsersHist,
		Local:        usersLocal,
	})
	register(Spec{
		Kind: UsersAltMin, Data: data.Users,
		Doc:    "Priv-AltMin U-step statistics of the group's users: a = Σ W Wᵀ, b = Σ ỹ W over each member's first portion training rows, W = clip₂(vec(x vᵀ), clip_w), ỹ = clip(y, clip_y)",
		Params: append(append([]string{}, withU...), "clip_w", "clip_y", "portion"),
		Inputs: func(sh *data.Remote, p map[string]float64) []ArraySpec { return uInputs(sh, p, nil) },
		Outputs: func(sh *data.Remote, req data.PassRequest) []ArraySpec {
			dk := workDim(sh, req.Params) * int(req.Params["rank"])
			return []ArraySpec{{Name: "a", Rows: dk, Cols: dk, Doc: "Σ W Wᵀ"}, {Name: "b", Rows: 1, Cols: dk, Doc: "Σ ỹ W"}}
		},
		Records:      records,
		CheckRequest: checkUsersRequest,
		CheckResult:  checkAltMin,
		Local:        usersLocal,
	})
	register(Spec{
		Kind: UsersHoldout, Data: data.Users,
		Doc:    "evaluation of U on the hold-out rows: Σ over users with hold-out rows of their mean hold-out loss (loss_sum) and their number (loss_users); not private",
		Params: append(append([]string{}, withU...), "head_all", "heads"),
		Inputs: func(sh *data.Remote, p map[string]float64) []ArraySpec { return uInputs(sh, p, nil) },
		Outputs: func(sh *data.Remote, req data.PassRequest) []ArraySpec {
			if req.Params["heads"] != 1 {
				return nil
			}
			return []ArraySpec{{Name: "heads", Rows: sh.Users, Cols: int(req.Params["rank"]), Doc: "row i: user i's head (zero for a non-member)"}}
		},
		Scalars:      []string{"loss_sum", "loss_users"},
		Records:      records,
		CheckRequest: checkUsersRequest,
		CheckResult:  checkUsersHoldout,
		Local:        usersLocal,
	})
	register(Spec{
		Kind: UsersValidation, Data: data.Users,
		Doc:          "Σ over users of their leave-one-out scores s_i ∈ [0, 1] of U on their head rows (score_sum)",
		Params:       append(append([]string{}, withU...), "head_all", "accuracy"),
		Inputs:       func(sh *data.Remote, p map[string]float64) []ArraySpec { return uInputs(sh, p, nil) },
		Outputs:      func(*data.Remote, data.PassRequest) []ArraySpec { return nil },
		Scalars:      []string{"score_sum"},
		Records:      records,
		CheckRequest: checkUsersRequest,
		CheckResult: func(_ *data.Remote, req data.PassRequest, res *data.PassResult) error {
			if v := res.Scalars["score_sum"]; !(v >= 0 && v <= float64(members(req, res.Records))) {
				return fmt.Errorf("score_sum %v is outside [0, users]", v)
			}
			return nil
		},
		Local: usersLocal,
	})
}

// edgesSpec is the histogram's edges input: bins public, strictly
// increasing, positive edges.
func edgesSpec(p map[string]float64) ArraySpec {
	return ArraySpec{Name: "edges", Rows: 1, Cols: int(p["bins"]), Doc: "public, strictly increasing, positive bin edges"}
}

// workDim is the working dimension of a users request: proj, or p.
func workDim(sh *data.Remote, p map[string]float64) int {
	if k := int(p["proj"]); k > 0 {
		return k
	}
	return sh.P
}

// projInputs lists the group (when grouped) after extra, then the
// projection input (when proj > 0).
func projInputs(sh *data.Remote, p map[string]float64, extra []ArraySpec) []ArraySpec {
	out := append([]ArraySpec{}, extra...)
	if p["grouped"] == 1 {
		out = append(out, ArraySpec{Name: "group", Rows: 1, Cols: sh.Users, Doc: "1 for the users of the group (index in increasing id order), 0 elsewhere"})
	}
	if k := int(p["proj"]); k > 0 {
		out = append(out, ArraySpec{Name: "m", Rows: k, Cols: sh.P, Doc: "public projection M (k′×p): features are M x"})
	}
	return out
}

// uInputs lists U (d×rank) first, then extra, then the projection.
func uInputs(sh *data.Remote, p map[string]float64, extra []ArraySpec) []ArraySpec {
	u := ArraySpec{Name: "u", Rows: workDim(sh, p), Cols: int(p["rank"]), Doc: "the current representation U"}
	return projInputs(sh, p, append([]ArraySpec{u}, extra...))
}

// isFlag reports whether v is 0 or 1.
func isFlag(v float64) bool { return v == 0 || v == 1 }

// checkUsersRequest checks the parameters' ranges and the side inputs'
// values of a users request.
func checkUsersRequest(sh *data.Remote, req data.PassRequest) error {
	p := req.Params
	for _, name := range []string{"local_fraction", "holdout"} {
		if v := p[name]; v < 0 || v > 0.9 {
			return fmt.Errorf("%s %v is outside [0, 0.9]", name, v)
		}
	}
	for _, name := range []string{"sign", "loss", "head_all", "heads", "accuracy", "grouped"} {
		if v, ok := p[name]; ok && !isFlag(v) {
			return fmt.Errorf("%s %v is not 0 or 1", name, v)
		}
	}
	if k := p["proj"]; k < 0 || k != math.Trunc(k) || k > float64(sh.P) {
		return fmt.Errorf("proj %v is not an integer in [0, %d]", k, sh.P)
	}
	if c, ok := p["clip"]; ok && c < 0 {
		return fmt.Errorf("clip %v is negative", c)
	}
	if b, ok := p["bins"]; ok && (b < 1 || b != math.Trunc(b) || b > 1e5) {
		return fmt.Errorf("bins %v is not an integer in [1, 100000]", b)
	}
	if r, ok := p["rank"]; ok {
		if r < 1 || r != math.Trunc(r) || int(r) > workDim(sh, p) {
			return fmt.Errorf("rank %v is not an integer in [1, %d]", r, workDim(sh, p))
		}
	}
	for _, name := range []string{"batch", "round", "seed"} {
		if v := p[name]; v < 0 || v != math.Trunc(v) || v >= 1<<53 {
			return fmt.Errorf("%s %v is not an integer in [0, 2⁵³)", name, v)
		}
	}
	if g, ok := req.Input("group"); ok {
		for _, v := range g.Data {
			if !isFlag(v) {
				return fmt.Errorf("group holds %v, not 0 or 1", v)
			}
		}
	}
	if req.Kind == UsersAltMin {
		if p["loss"] != 0 {
			return fmt.Errorf("the Priv-AltMin statistics use the squared loss (loss 0)")
		}
		if !(p["clip_w"] > 0) || !(p["clip_y"] > 0) {
			return fmt.Errorf("clip_w %v and clip_y %v must be positive", p["clip_w"], p["clip_y"])
		}
		if po := p["portion"]; po < 1 || po != math.Trunc(po) || po > 1e6 {
			return fmt.Errorf("portion %v is not an integer in [1, 10⁶]", po)
		}
		if dk := workDim(sh, p) * int(p["rank"]); dk > 4096 {
			return fmt.Errorf("d·rank = %d exceeds 4096", dk)
		}
	}
	if e, ok := req.Input("edges"); ok {
		for j, v := range e.Data {
			if !(v > 0) || (j > 0 && v <= e.Data[j-1]) {
				return fmt.Errorf("edges are not positive and strictly increasing")
			}
		}
	}
	return nil
}

// checkUsersSum checks a sum of clipped per-user terms
// (kernel.CheckClippedSum).
func checkUsersSum(sym bool) func(sh *data.Remote, req data.PassRequest, res *data.PassResult) error {
	return func(sh *data.Remote, req data.PassRequest, res *data.PassResult) error {
		sum, _ := res.Output("sum")
		return kernel.CheckUsersSum(sum.Data, sum.Rows, sym, res.Records, res.Scalars["clipped"], req.Params["clip"])
	}
}

// members is the number of users a request aggregates: the group's
// members, or every user.
func members(req data.PassRequest, users int64) int64 {
	g, ok := req.Input("group")
	if !ok {
		return users
	}
	var m int64
	for _, v := range g.Data {
		if v == 1 {
			m++
		}
	}
	return m
}

// checkAltMin checks the U-step statistics (kernel.CheckAltMin) of the
// group's members.
func checkAltMin(_ *data.Remote, req data.PassRequest, res *data.PassResult) error {
	a, _ := res.Output("a")
	b, _ := res.Output("b")
	p := req.Params
	return kernel.CheckAltMin(a.Data, b.Data, a.Rows, float64(members(req, res.Records)), p["portion"], p["clip_w"], p["clip_y"])
}

// checkUsersHist checks a histogram: one count per member.
func checkUsersHist(_ *data.Remote, req data.PassRequest, res *data.PassResult) error {
	c, _ := res.Output("counts")
	return kernel.CheckHist(c.Data, members(req, res.Records))
}

// checkUsersHoldout checks the hold-out scalars.
func checkUsersHoldout(_ *data.Remote, req data.PassRequest, res *data.PassResult) error {
	return kernel.CheckHoldout(res.Scalars["loss_sum"], res.Scalars["loss_users"], res.Records, req.Params["loss"] == 1)
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

// UsersRequest is a users pass request in typed form: estimators build
// one and Encode it to the wire request, and the Local implementations
// and pipelines read one back with DecodeUsers; nothing else reads a users
// request's parameters. Kind selects the kind, which reads
//
//	every kind          LocalFraction, Holdout, Sign, M (Proj×p), Group
//	users.ustat         Clip
//	users.ustat_hist    Edges
//	users.gradient      U (d×Rank), Rank, Logistic, Clip, Batch, Round, Seed
//	users.gradient_hist U, Rank, Logistic, Edges, Batch, Round, Seed
//	users.holdout       U, Rank, Logistic, HeadAll, Heads
//	users.validation    U, Rank, Logistic, HeadAll, Accuracy
//	users.altmin        U, Rank, ClipW, ClipY, Portion
//
// and ignores the other fields.
type UsersRequest struct {
	Kind                   string
	LocalFraction, Holdout float64   // the per-user split (UserSplit)
	Sign                   bool      // responses read as sign(y)
	Proj                   int       // k′ > 0: features are M x
	M                      []float64 // the public projection, Proj×p row-major (nil: none)
	Group                  []float64 // the contributing users, a 0/1 mask over the users (nil: all)
	U                      []float64 // the representation, d×Rank row-major
	Rank                   int
	Logistic               bool      // the logistic loss (else squared)
	Clip                   float64   // the per-user Frobenius clip (0 or +Inf: none)
	Batch, Round           int       // theory mode (Batch > 0): the batch size and the round
	Seed                   uint64    // theory mode: the public seed of the users' row orders (< 2⁵³)
	Edges                  []float64 // the histogram's public edges
	HeadAll                bool      // heads on the training and local rows
	Heads                  bool      // holdout: return every user's head (in process only)
	Accuracy               bool      // validation: score signs (else squared error)
	ClipW, ClipY           float64   // Priv-AltMin's row clips
	Portion                int       // Priv-AltMin's rows per member
}

// flag is a boolean as a parameter.
func flag(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Encode returns the wire request of r.
func (r UsersRequest) Encode() data.PassRequest {
	prm := map[string]float64{"local_fraction": r.LocalFraction, "holdout": r.Holdout, "sign": flag(r.Sign), "proj": float64(r.Proj), "grouped": flag(r.Group != nil)}
	req := data.PassRequest{Kind: r.Kind, Params: prm}
	add := func(name string, rows int, v []float64) {
		cols := 0
		if rows > 0 {
			cols = len(v) / rows
		}
		req.Inputs = append(req.Inputs, data.Array{Name: name, Rows: rows, Cols: cols, Data: v})
	}
	if r.Kind != UsersUstat && r.Kind != UsersUstatHist {
		prm["rank"], prm["loss"] = float64(r.Rank), flag(r.Logistic)
		if r.Rank > 0 {
			add("u", len(r.U)/r.Rank, r.U)
		}
	}
	switch r.Kind {
	case UsersUstat, UsersGradient:
		prm["clip"] = r.Clip
		if math.IsInf(r.Clip, 1) {
			prm["clip"] = 0
		}
	case UsersUstatHist, UsersGradientHist:
		prm["bins"] = float64(len(r.Edges))
		add("edges", 1, r.Edges)
	case UsersHoldout, UsersValidation:
		prm["head_all"] = flag(r.HeadAll)
		if r.Kind == UsersHoldout {
			prm["heads"] = flag(r.Heads)
		} else {
			prm["accuracy"] = flag(r.Accuracy)
		}
	case UsersAltMin:
		prm["clip_w"], prm["clip_y"], prm["portion"] = r.ClipW, r.ClipY, float64(r.Portion)
	}
	if r.Kind == UsersGradient || r.Kind == UsersGradientHist {
		prm["batch"], prm["round"], prm["seed"] = float64(r.Batch), float64(r.Round), float64(r.Seed)
	}
	if r.Group != nil {
		add("group", 1, r.Group)
	}
	if r.Proj > 0 {
		add("m", r.Proj, r.M)
	}
	return req
}

// DecodeUsers reads a users request (validated by Validate) for data of p
// features; a clip of 0 reads as +Inf (none).
func DecodeUsers(p int, req data.PassRequest) (UsersRequest, error) {
	prm := req.Params
	r := UsersRequest{Kind: req.Kind, LocalFraction: prm["local_fraction"], Holdout: prm["holdout"], Sign: prm["sign"] == 1,
		Proj: int(prm["proj"]), Rank: int(prm["rank"]), Logistic: prm["loss"] == 1, Clip: math.Inf(1), HeadAll: prm["head_all"] == 1,
		Heads: prm["heads"] == 1, Accuracy: prm["accuracy"] == 1, Batch: int(prm["batch"]), Round: int(prm["round"]), Seed: uint64(prm["seed"]),
		ClipW: prm["clip_w"], ClipY: prm["clip_y"], Portion: int(prm["portion"])}
	switch req.Kind {
	case UsersUstat, UsersUstatHist, UsersGradient, UsersGradientHist, UsersHoldout, UsersValidation, UsersAltMin:
	default:
		return r, fmt.Errorf("%q is not a users pass", req.Kind)
	}
	if v := prm["clip"]; v > 0 {
		r.Clip = v
	}
	d := p
	if r.Proj > 0 {
		m, ok := req.Input("m")
		if !ok || m.Rows != r.Proj || m.Cols != p {
			return r, fmt.Errorf("projection input m missing or not %d×%d", r.Proj, p)
		}
		r.M, d = m.Data, r.Proj
	}
	if u, ok := req.Input("u"); ok {
		if u.Rows != d || u.Cols != r.Rank {
			return r, fmt.Errorf("input u is %d×%d, want %d×%d", u.Rows, u.Cols, d, r.Rank)
		}
		r.U = u.Data
	}
	if e, ok := req.Input("edges"); ok {
		r.Edges = e.Data
	}
	if g, ok := req.Input("group"); ok {
		r.Group = g.Data
	}
	return r, nil
}

// UsersConfig is a decoded users request with the data's dimension p and
// the working dimension D (Proj, or p): both pass.Local and the Beam
// pipelines compute every per-user term through it, so that they agree up
// to the order of the sum over users.
type UsersConfig struct {
	UsersRequest
	P, D int
	// heads, when not nil, receives every member's head (row Index,
	// users×Rank): the in-process runner's output of users.holdout.
	heads []float64
}

// UsersConfigOf decodes a users request (validated by Validate) for data
// of p features.
func UsersConfigOf(p int, req data.PassRequest) (*UsersConfig, error) {
	r, err := DecodeUsers(p, req)
	if err != nil {
		return nil, err
	}
	c := &UsersConfig{UsersRequest: r, P: p, D: p}
	if r.Proj > 0 {
		c.D = r.Proj
	}
	return c, nil
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
	m := kernel.Model{U: c.U, D: c.D, K: c.Rank, Logistic: c.Logistic}
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
			a.Sum[kernel.HistBin(z, c.Edges)]++
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
			a.Sum[kernel.HistBin(kernel.OuterNorm(g, v), c.Edges)]++
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

// Result turns the total partial sum into the pass's result.
func (c *UsersConfig) Result(a *UsersPartial) *data.PassResult {
	res := &data.PassResult{Records: a.Users}
	switch c.Kind {
	case UsersUstat:
		d := c.D
		// Mirror the upper triangle (the terms fill it) so that the sum is
		// exactly symmetric.
		for i := 0; i < d; i++ {
			for j := i + 1; j < d; j++ {
				a.Sum[j*d+i] = a.Sum[i*d+j]
			}
		}
		res.Outputs = []data.Array{{Name: "sum", Rows: d, Cols: d, Data: a.Sum}}
		res.Scalars = map[string]float64{"clipped": float64(a.Clipped)}
	case UsersGradient:
		res.Outputs = []data.Array{{Name: "sum", Rows: c.D, Cols: c.Rank, Data: a.Sum}}
		res.Scalars = map[string]float64{"clipped": float64(a.Clipped), "skipped": float64(a.Skipped)}
	case UsersUstatHist, UsersGradientHist:
		res.Outputs = []data.Array{{Name: "counts", Rows: 1, Cols: len(a.Sum), Data: a.Sum}}
	case UsersHoldout:
		res.Scalars = map[string]float64{"loss_sum": a.LossSum, "loss_users": float64(a.LossUsers)}
		if c.heads != nil {
			res.Outputs = []data.Array{{Name: "heads", Rows: len(c.heads) / c.Rank, Cols: c.Rank, Data: c.heads}}
		}
	case UsersValidation:
		res.Scalars = map[string]float64{"score_sum": a.LossSum}
	case UsersAltMin:
		dk := c.D * c.Rank
		am, b := kernel.AltMinA(a.Sum, c.D, c.Rank)
		res.Outputs = []data.Array{{Name: "a", Rows: dk, Cols: dk, Data: am}, {Name: "b", Rows: 1, Cols: dk, Data: b}}
	}
	return res
}

// usersLocal is every users kind over an in-memory data set: the users
// in fixed contiguous chunks (a function of the number of users and the
// size of a partial sum only), the chunks on a pool of workers with one
// scratch each, and the chunks' partial sums added in chunk order, so
// that the result does not depend on the number of threads.
func usersLocal(ctx context.Context, ds *data.Dataset, req data.PassRequest) (*data.PassResult, error) {
	if len(ds.UserStart) < 2 || ds.X == nil || len(ds.Y) != ds.N() {
		return nil, fmt.Errorf("the data set holds no users rows")
	}
	c, err := UsersConfigOf(ds.P(), req)
	if err != nil {
		return nil, err
	}
	n := len(ds.UserStart) - 1
	if c.Heads {
		c.heads = make([]float64, n*c.Rank)
	}
	size := len(c.NewPartial().Sum)
	chunks := max(1, min(n, 64, int(4e6/float64(size+1))))
	parts := make([]*UsersPartial, chunks)
	scratch := make([]UserScratch, workers(chunks))
	for w := range scratch {
		scratch[w].blocked = true
	}
	err = ParallelChunks(ctx, chunks, func(w, ch int) {
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
	return c.Result(parts[0]), nil
}

// workers is the number of goroutines for chunks of work.
func workers(chunks int) int { return max(1, min(runtime.GOMAXPROCS(0), chunks)) }

// ParallelChunks runs fn(worker, chunk) for every chunk on a fixed pool of
// min(GOMAXPROCS, chunks) goroutines; worker indexes per-goroutine
// scratch. It stops early and returns ctx.Err() when the context is
// cancelled.
func ParallelChunks(ctx context.Context, chunks int, fn func(worker, chunk int)) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers(chunks); w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				c := int(next.Add(1) - 1)
				if c >= chunks || ctx.Err() != nil {
					return
				}
				fn(w, c)
			}
		}(w)
	}
	wg.Wait()
	return ctx.Err()
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
