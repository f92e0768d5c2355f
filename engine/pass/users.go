package pass

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
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
	// and not private: an evaluation output.
	UsersHoldout = "users.holdout"
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
var usersCommon = []string{"local_fraction", "holdout", "sign", "proj"}

// logisticRidge is the ridge of the users' local logistic fits.
const logisticRidge = 1e-3

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
		Params: append(append([]string{}, withU...), "clip"),
		Inputs: func(sh *data.Remote, p map[string]float64) []ArraySpec { return uInputs(sh, p, nil) },
		Outputs: sumOut(func(sh *data.Remote, req data.PassRequest) (int, int) {
			return workDim(sh, req.Params), int(req.Params["rank"])
		}),
		Scalars:      []string{"clipped"},
		Records:      records,
		CheckRequest: checkUsersRequest,
		CheckResult:  checkUsersSum(false),
		Local:        usersLocal,
	})
	register(Spec{
		Kind: UsersGradientHist, Data: data.Users,
		Doc:    "histogram of the users' unclipped gradient norms ‖g_i v_iᵀ‖_F at U on the public edges (one count per user)",
		Params: append(append([]string{}, withU...), "bins"),
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
		Inputs: func(sh *data.Remote, p map[string]float64) []ArraySpec {
			return uInputs(sh, p, []ArraySpec{{Name: "group", Rows: 1, Cols: sh.Users, Doc: "1 for the users of the group (index in increasing id order), 0 elsewhere"}})
		},
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
		Doc:          "evaluation of U on the hold-out rows: Σ over users with hold-out rows of their mean hold-out loss (loss_sum) and their number (loss_users); not private",
		Params:       append(append([]string{}, withU...), "head_all"),
		Inputs:       func(sh *data.Remote, p map[string]float64) []ArraySpec { return uInputs(sh, p, nil) },
		Outputs:      func(*data.Remote, data.PassRequest) []ArraySpec { return nil },
		Scalars:      []string{"loss_sum", "loss_users"},
		Records:      records,
		CheckRequest: checkUsersRequest,
		CheckResult:  checkUsersHoldout,
		Local:        usersLocal,
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

// projInputs lists the projection input (when proj > 0) after extra.
func projInputs(sh *data.Remote, p map[string]float64, extra []ArraySpec) []ArraySpec {
	out := append([]ArraySpec{}, extra...)
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
	for _, name := range []string{"sign", "loss", "head_all"} {
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
		g, _ := req.Input("group")
		for _, v := range g.Data {
			if !isFlag(v) {
				return fmt.Errorf("group holds %v, not 0 or 1", v)
			}
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

// checkUsersCount checks that a scalar count is an integer in [0, max].
func checkUsersCount(name string, v float64, max int64) error {
	if v < 0 || v != math.Trunc(v) || v > float64(max) {
		return fmt.Errorf("%s = %v is not a count in [0, %d]", name, v, max)
	}
	return nil
}

// checkUsersSum checks a sum of clipped per-user terms: its norm is at
// most Records·clip (rounding allowed for), the clipped count is a count
// of users, and a U-statistic sum is exactly symmetric.
func checkUsersSum(sym bool) func(sh *data.Remote, req data.PassRequest, res *data.PassResult) error {
	return func(sh *data.Remote, req data.PassRequest, res *data.PassResult) error {
		sum, _ := res.Output("sum")
		if sym && symOf(sum.Rows, sum.Data) == nil {
			return fmt.Errorf("the U-statistic sum is not symmetric")
		}
		if err := checkUsersCount("clipped", res.Scalars["clipped"], res.Records); err != nil {
			return err
		}
		if c := req.Params["clip"]; c > 0 {
			if nrm, lim := Norm(sum.Data), float64(res.Records)*c; nrm > lim*(1+1e-9) {
				return fmt.Errorf("the sum has norm %.6g > users·clip = %.6g: the per-user terms were not clipped", nrm, lim)
			}
		}
		return nil
	}
}

// checkAltMin checks the U-step statistics: a is symmetric, and with m
// members each contributing at most portion rows, ‖a‖_F ≤ m·portion·c_W²
// and ‖b‖ ≤ m·portion·c_W·c_y (rounding allowed for).
func checkAltMin(_ *data.Remote, req data.PassRequest, res *data.PassResult) error {
	a, _ := res.Output("a")
	b, _ := res.Output("b")
	if symOf(a.Rows, a.Data) == nil {
		return fmt.Errorf("the statistic a is not symmetric")
	}
	g, _ := req.Input("group")
	var m float64
	for _, v := range g.Data {
		m += v
	}
	p := req.Params
	cw, cy, po := p["clip_w"], p["clip_y"], p["portion"]
	if nrm, lim := Norm(a.Data), m*po*cw*cw; nrm > lim*(1+1e-9) {
		return fmt.Errorf("a has norm %.6g > members·portion·clip_w² = %.6g: the rows were not clipped", nrm, lim)
	}
	if nrm, lim := Norm(b.Data), m*po*cw*cy; nrm > lim*(1+1e-9) {
		return fmt.Errorf("b has norm %.6g > members·portion·clip_w·clip_y = %.6g: the rows were not clipped", nrm, lim)
	}
	return nil
}

// checkUsersHist checks a histogram: one count per user.
func checkUsersHist(_ *data.Remote, _ data.PassRequest, res *data.PassResult) error {
	c, _ := res.Output("counts")
	var tot float64
	for j, v := range c.Data {
		if err := checkUsersCount(fmt.Sprintf("count %d", j), v, res.Records); err != nil {
			return err
		}
		tot += v
	}
	if tot != float64(res.Records) {
		return fmt.Errorf("the histogram counts %v users, not %d (one count per user)", tot, res.Records)
	}
	return nil
}

// checkUsersHoldout checks the hold-out scalars.
func checkUsersHoldout(_ *data.Remote, req data.PassRequest, res *data.PassResult) error {
	lu := res.Scalars["loss_users"]
	if err := checkUsersCount("loss_users", lu, res.Records); err != nil {
		return err
	}
	ls := res.Scalars["loss_sum"]
	if ls < 0 || (req.Params["loss"] == 1 && ls > lu) {
		return fmt.Errorf("loss_sum = %v is outside its range", ls)
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

// UsersConfig is a validated users request in the form the per-user terms
// need: both pass.Local and the Beam pipelines compute every per-user term
// through it, so that they agree up to the order of the sum over users.
type UsersConfig struct {
	Kind                   string
	P, D, K                int     // data dimension, working dimension, rank
	LocalFraction, Holdout float64 // the split
	Sign, Logistic         bool
	HeadAll                bool
	Clip                   float64   // +Inf: no clipping
	M                      []float64 // k′×p projection (nil: none)
	U                      []float64 // d×k
	Edges                  []float64
	// Priv-AltMin: the row clips, the rows per user and the group mask.
	ClipW, ClipY float64
	Portion      int
	Group        []float64
}

// UsersConfigOf reads a users request (validated by Validate) for data of
// p features.
func UsersConfigOf(p int, req data.PassRequest) (*UsersConfig, error) {
	c := &UsersConfig{Kind: req.Kind, P: p, D: p, LocalFraction: req.Params["local_fraction"], Holdout: req.Params["holdout"],
		Sign: req.Params["sign"] == 1, Logistic: req.Params["loss"] == 1, HeadAll: req.Params["head_all"] == 1,
		K: int(req.Params["rank"]), Clip: math.Inf(1)}
	switch req.Kind {
	case UsersUstat, UsersUstatHist, UsersGradient, UsersGradientHist, UsersHoldout, UsersAltMin:
	default:
		return nil, fmt.Errorf("%q is not a users pass", req.Kind)
	}
	if v := req.Params["clip"]; v > 0 {
		c.Clip = v
	}
	if k := int(req.Params["proj"]); k > 0 {
		m, ok := req.Input("m")
		if !ok || m.Rows != k || m.Cols != p {
			return nil, fmt.Errorf("projection input m missing or not %d×%d", k, p)
		}
		c.M, c.D = m.Data, k
	}
	if u, ok := req.Input("u"); ok {
		c.U = u.Data
		if u.Rows != c.D || u.Cols != c.K {
			return nil, fmt.Errorf("input u is %d×%d, want %d×%d", u.Rows, u.Cols, c.D, c.K)
		}
	}
	if e, ok := req.Input("edges"); ok {
		c.Edges = e.Data
	}
	if req.Kind == UsersAltMin {
		g, ok := req.Input("group")
		if !ok {
			return nil, fmt.Errorf("input group missing")
		}
		c.Group, c.ClipW, c.ClipY, c.Portion = g.Data, req.Params["clip_w"], req.Params["clip_y"], int(req.Params["portion"])
	}
	return c, nil
}

// UsersPartial is a partial sum of per-user terms: what a combiner
// accumulates. Sum is the clipped-term sum (or the histogram counts).
type UsersPartial struct {
	Users     int64
	Clipped   int64
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
		n = c.D * c.K
	case UsersUstatHist, UsersGradientHist:
		n = len(c.Edges) + 1
	case UsersAltMin:
		dk := c.D * c.K
		n = dk*dk + dk
	}
	return &UsersPartial{Sum: make([]float64, n)}
}

// Merge adds o into a.
func (a *UsersPartial) Merge(o *UsersPartial) {
	a.Users += o.Users
	a.Clipped += o.Clipped
	if len(a.Sum) < len(o.Sum) { // a decoded empty partial
		a.Sum = append(a.Sum, make([]float64, len(o.Sum)-len(a.Sum))...)
	}
	for i, v := range o.Sum {
		a.Sum[i] += v
	}
	a.LossSum += o.LossSum
	a.LossUsers += o.LossUsers
}

// Add adds user u's bounded term to a.
func (c *UsersConfig) Add(a *UsersPartial, u User) {
	a.Users++
	x, y := c.features(u)
	m0, rest := UserSplit(len(y), c.LocalFraction, c.Holdout)
	switch c.Kind {
	case UsersUstat:
		if c.ustatTerm(x, y[:m0], a.Sum) {
			a.Clipped++
		}
	case UsersUstatHist:
		z := c.ustatNorm(x, y[:m0])
		a.Sum[histBin(z, c.Edges)]++
	case UsersGradient:
		if c.gradientTerm(x[:m0], y[:m0], a.Sum) {
			a.Clipped++
		}
	case UsersGradientHist:
		a.Sum[histBin(c.gradientNorm(x[:m0], y[:m0]), c.Edges)]++
	case UsersAltMin:
		if u.Index >= 0 && u.Index < len(c.Group) && c.Group[u.Index] == 1 {
			c.altminTerm(x[:m0], y[:m0], a.Sum)
		}
	case UsersHoldout:
		if l, ok := c.holdoutLoss(x, y, m0, rest); ok {
			a.LossSum += l
			a.LossUsers++
		}
	}
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
		res.Outputs = []data.Array{{Name: "sum", Rows: c.D, Cols: c.K, Data: a.Sum}}
		res.Scalars = map[string]float64{"clipped": float64(a.Clipped)}
	case UsersUstatHist, UsersGradientHist:
		res.Outputs = []data.Array{{Name: "counts", Rows: 1, Cols: len(a.Sum), Data: a.Sum}}
	case UsersHoldout:
		res.Scalars = map[string]float64{"loss_sum": a.LossSum, "loss_users": float64(a.LossUsers)}
	case UsersAltMin:
		dk := c.D * c.K
		am := a.Sum[:dk*dk]
		for i := 0; i < dk; i++ {
			for j := i + 1; j < dk; j++ {
				am[j*dk+i] = am[i*dk+j]
			}
		}
		res.Outputs = []data.Array{{Name: "a", Rows: dk, Cols: dk, Data: am}, {Name: "b", Rows: 1, Cols: dk, Data: a.Sum[dk*dk:]}}
	}
	return res
}

// usersLocal is every users kind over an in-memory data set: users in
// data order, each user's term added in turn.
func usersLocal(ctx context.Context, ds *data.Dataset, req data.PassRequest) (*data.PassResult, error) {
	if len(ds.UserStart) < 2 || ds.X == nil || len(ds.Y) != ds.N() {
		return nil, fmt.Errorf("the data set holds no users rows")
	}
	c, err := UsersConfigOf(ds.P(), req)
	if err != nil {
		return nil, err
	}
	a := c.NewPartial()
	for g := 0; g+1 < len(ds.UserStart); g++ {
		if g%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		lo, hi := ds.UserStart[g], ds.UserStart[g+1]
		u := User{X: make([][]float64, hi-lo), Y: ds.Y[lo:hi]}
		for i := lo; i < hi; i++ {
			u.X[i-lo] = ds.X.RawRowView(i)
		}
		u.Index = g
		c.Add(a, u)
	}
	return c.Result(a), nil
}

// features returns the user's working features (projected when the
// request carries M) and responses (signs when asked), as fresh slices.
func (c *UsersConfig) features(u User) ([][]float64, []float64) {
	x := make([][]float64, len(u.X))
	for j, r := range u.X {
		if c.M == nil {
			x[j] = r
			continue
		}
		w := make([]float64, c.D)
		for a := range w {
			mr := c.M[a*c.P : (a+1)*c.P]
			var s float64
			for q, v := range r {
				s += mr[q] * v
			}
			w[a] = s
		}
		x[j] = w
	}
	y := u.Y
	if c.Sign {
		y = make([]float64, len(u.Y))
		for j, v := range u.Y {
			y[j] = -1
			if v > 0 {
				y[j] = 1
			}
		}
	}
	return x, y
}

// histBin is the bin of v on edges: 0 for v ≤ edges[0] or NaN, j for v in
// (edges[j−1], edges[j]], len(edges) above the last edge.
func histBin(v float64, edges []float64) int {
	if math.IsNaN(v) || v <= edges[0] {
		return 0
	}
	lo, hi := 0, len(edges)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if edges[mid] >= v {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// ustatPrep rescales the user's m0 training rows: ã_j = (y_j/cy)(x_j/cx)
// and r_j = Σ_{l≠j} ã_l (prefix and suffix sums), the unclipped norm
// bound of Σ_j ã_j r_jᵀ (rounding included) and the factor turning it into
// Z. ok is false for a user without a term (fewer than two rows, a zero
// scale, a zero or NaN norm).
func (c *UsersConfig) ustatPrep(x [][]float64, y []float64) (at, rt [][]float64, nrm, scale float64, ok bool) {
	m0, d := len(y), c.D
	if m0 < 2 {
		return nil, nil, 0, 0, false
	}
	var cx, cy float64
	for j := 0; j < m0; j++ {
		cy = math.Max(cy, math.Abs(y[j]))
		for _, v := range x[j] {
			cx = math.Max(cx, math.Abs(v))
		}
	}
	if cx == 0 || cy == 0 {
		return nil, nil, 0, 0, false
	}
	at, rt = make([][]float64, m0), make([][]float64, m0)
	for j := 0; j < m0; j++ {
		yj := y[j] / cy
		at[j], rt[j] = make([]float64, d), make([]float64, d)
		for p, v := range x[j] {
			at[j][p] = yj * (v / cx)
		}
	}
	prefix := make([]float64, d)
	for j := 0; j < m0; j++ {
		copy(rt[j], prefix)
		for p, v := range at[j] {
			prefix[p] += v
		}
	}
	clear(prefix)
	for j := m0 - 1; j >= 0; j-- {
		for p := range rt[j] {
			rt[j][p] += prefix[p]
		}
		for p, v := range at[j] {
			prefix[p] += v
		}
	}
	nrm = ustatNormBound(at, rt, d)
	if nrm == 0 || math.IsNaN(nrm) {
		return nil, nil, 0, 0, false
	}
	return at, rt, nrm, (cy * cx) * (cy * cx) / float64(m0*(m0-1)), true
}

// ustatNormBound is an upper bound on ‖Σ_j a_j r_jᵀ‖_F with its rounding
// error: from the explicit product when m0 ≥ d, from the m0×m0 Grams
// otherwise (the bound of plugins/fedrep's U-statistic start).
func ustatNormBound(at, rt [][]float64, d int) float64 {
	const unit = 0x1p-53
	m0 := len(at)
	if m0 >= d {
		prod := make([]float64, d*d)
		for j := range at {
			for p, ap := range at[j] {
				row := prod[p*d : (p+1)*d]
				for q, rq := range rt[j] {
					row[q] += ap * rq
				}
			}
		}
		return norm2(prod) * (1 + 4*float64(m0+d)*unit)
	}
	var sum, bound float64
	for j := 0; j < m0; j++ {
		bound += norm2(at[j]) * norm2(rt[j])
		for l := 0; l <= j; l++ {
			var ga, gr float64
			for p := 0; p < d; p++ {
				ga += at[j][p] * at[l][p]
				gr += rt[j][p] * rt[l][p]
			}
			if l == j {
				sum += ga * gr
			} else {
				sum += 2 * ga * gr
			}
		}
	}
	return math.Sqrt(math.Max(sum, 0) + 4*float64(d+m0*m0+2)*unit*bound*bound)
}

// ustatNorm is the user's unclipped ‖Z_i‖_F bound (0 without a term).
func (c *UsersConfig) ustatNorm(x [][]float64, y []float64) float64 {
	_, _, nrm, scale, ok := c.ustatPrep(x, y)
	if !ok {
		return 0
	}
	return nrm * scale
}

// ustatTerm adds the user's clip(Z_i) (upper triangle, d×d row-major) to
// acc and reports a clip.
func (c *UsersConfig) ustatTerm(x [][]float64, y []float64, acc []float64) bool {
	at, rt, nrm, scale, ok := c.ustatPrep(x, y)
	if !ok {
		return false
	}
	clipped := false
	if z := nrm * scale; z > c.Clip || math.IsInf(z, 1) {
		scale, clipped = c.Clip/nrm, true
	}
	d := c.D
	for j := range at {
		for p := 0; p < d; p++ {
			ap := at[j][p] * scale
			row := acc[p*d : (p+1)*d]
			for q := p; q < d; q++ {
				row[q] += ap * rt[j][q]
			}
		}
	}
	return clipped
}

// head fits the user's head v on the rows for U: least squares (pseudo-
// inverse fallback) or ridge logistic regression; it also returns the
// rows' projections a_j = Uᵀx_j.
func (c *UsersConfig) head(x [][]float64, y []float64) []float64 {
	k, d := c.K, c.D
	b := len(y)
	a := make([]float64, b*k)
	for j := 0; j < b; j++ {
		aj := a[j*k : (j+1)*k]
		for p := 0; p < d; p++ {
			xp := x[j][p]
			if xp == 0 {
				continue
			}
			up := c.U[p*k : (p+1)*k]
			for q := range aj {
				aj[q] += xp * up[q]
			}
		}
	}
	v := make([]float64, k)
	if c.Logistic {
		logisticNewton(a, y, b, k, logisticRidge, v)
		return v
	}
	gk := make([]float64, k*k)
	h := make([]float64, k)
	for j := 0; j < b; j++ {
		aj := a[j*k : (j+1)*k]
		for q := 0; q < k; q++ {
			h[q] += aj[q] * y[j]
			for r := 0; r <= q; r++ {
				gk[q*k+r] += aj[q] * aj[r]
			}
		}
	}
	for q := 0; q < k; q++ {
		for r := 0; r < q; r++ {
			gk[r*k+q] = gk[q*k+r]
		}
	}
	if b >= k && solveSmallSPD(gk, h, k) {
		return h
	}
	pinvSolve(a, b, k, y, v)
	return v
}

// gradient returns g and v with g vᵀ the gradient in U of the user's mean
// loss over its training rows at its head v (fitted on the same rows).
func (c *UsersConfig) gradient(x [][]float64, y []float64) (g, v []float64) {
	k, d := c.K, c.D
	v = c.head(x, y)
	w := make([]float64, d)
	for p := 0; p < d; p++ {
		var s float64
		up := c.U[p*k : (p+1)*k]
		for a := 0; a < k; a++ {
			s += up[a] * v[a]
		}
		w[p] = s
	}
	g = make([]float64, d)
	b := float64(len(y))
	for j, xr := range x {
		var pred float64
		for p := 0; p < d; p++ {
			pred += xr[p] * w[p]
		}
		var cf float64
		if c.Logistic {
			cf = -y[j] / (1 + math.Exp(y[j]*pred)) / b
		} else {
			cf = 2 * (pred - y[j]) / b
		}
		if cf == 0 {
			continue
		}
		for p := 0; p < d; p++ {
			g[p] += cf * xr[p]
		}
	}
	return g, v
}

// gradientNorm is ‖g vᵀ‖_F for a user with training rows (0 without
// rows or when not finite).
func (c *UsersConfig) gradientNorm(x [][]float64, y []float64) float64 {
	if len(y) == 0 {
		return 0
	}
	g, v := c.gradient(x, y)
	nrm := norm2(g) * norm2(v)
	if math.IsNaN(nrm) || math.IsInf(nrm, 0) {
		return 0
	}
	return nrm
}

// gradientTerm adds the user's clipped gradient to acc (d×k) and reports
// a clip; a user without training rows, or whose gradient is zero or not
// finite, adds nothing (with clipping), as in the local fit.
func (c *UsersConfig) gradientTerm(x [][]float64, y []float64, acc []float64) bool {
	if len(y) == 0 {
		return false
	}
	k := c.K
	g, v := c.gradient(x, y)
	if math.IsInf(c.Clip, 1) {
		for p, gp := range g {
			for a := 0; a < k; a++ {
				acc[p*k+a] += gp * v[a]
			}
		}
		return false
	}
	ng, nv := norm2(g), norm2(v)
	if ng == 0 || nv == 0 || math.IsInf(ng, 0) || math.IsNaN(ng) || math.IsInf(nv, 0) || math.IsNaN(nv) {
		return false
	}
	nrm := ng * nv
	scale := math.Min(nrm, c.Clip)
	for p, gp := range g {
		gs := gp / ng * scale
		for a := 0; a < k; a++ {
			acc[p*k+a] += gs * (v[a] / nv)
		}
	}
	return nrm > c.Clip
}

// altminTerm adds a member's Priv-AltMin statistics to acc (the upper
// triangle of a = Σ W Wᵀ, dk×dk, then b = Σ ỹ W): with v̂ = v/‖v‖ and
// g_r = min(‖x_r‖‖v‖, c_W)·x_r/‖x_r‖ for the first min(portion, m0) rows,
// W_r = g_r ⊗ v̂, so a_j = H ⊗ v̂v̂ᵀ with H = Σ_r g_r g_rᵀ and
// b_j = (Σ_r ỹ_r g_r) ⊗ v̂. A member whose head is zero or not finite adds
// nothing; a row of zero or infinite norm is skipped.
func (c *UsersConfig) altminTerm(x [][]float64, y []float64, acc []float64) {
	d, k := c.D, c.K
	dk := d * k
	v := c.head(x, y)
	nv := norm2(v)
	if nv == 0 || math.IsInf(nv, 0) || math.IsNaN(nv) {
		return
	}
	vh := make([]float64, k)
	for a := range vh {
		vh[a] = v[a] / nv
	}
	h := make([]float64, d*d) // upper triangle of H
	hb := make([]float64, d)
	for r := 0; r < min(c.Portion, len(y)); r++ {
		xr := x[r]
		nx := norm2(xr)
		if nx == 0 || math.IsInf(nx, 0) {
			continue
		}
		t := math.Min(nx*nv, c.ClipW)
		yt := math.Max(-c.ClipY, math.Min(c.ClipY, y[r]))
		sc := t / nx
		g := make([]float64, d)
		for p, xv := range xr {
			g[p] = sc * xv
			hb[p] += yt * g[p]
		}
		for p := 0; p < d; p++ {
			if g[p] == 0 {
				continue
			}
			row := h[p*d : (p+1)*d]
			for q := p; q < d; q++ {
				row[q] += g[p] * g[q]
			}
		}
	}
	for p := 0; p < d; p++ {
		for q := p; q < d; q++ {
			hpq := h[p*d+q]
			if hpq == 0 {
				continue
			}
			for a := 0; a < k; a++ {
				i := p*k + a
				b0 := 0
				if q == p {
					b0 = a
				}
				for b := b0; b < k; b++ {
					acc[i*dk+q*k+b] += hpq * vh[a] * vh[b]
				}
			}
		}
	}
	bs := acc[dk*dk:]
	for p := 0; p < d; p++ {
		for a := 0; a < k; a++ {
			bs[p*k+a] += hb[p] * vh[a]
		}
	}
}

// holdoutLoss fits the user's head on its head rows and returns its mean
// loss on its hold-out rows (ok false without hold-out rows).
func (c *UsersConfig) holdoutLoss(x [][]float64, y []float64, m0, rest int) (float64, bool) {
	if rest == len(y) {
		return 0, false
	}
	s, f := m0, rest
	if f == s || c.HeadAll {
		s = 0
	}
	v := c.head(x[s:f], y[s:f])
	k, d := c.K, c.D
	w := make([]float64, d)
	for p := 0; p < d; p++ {
		var t float64
		for a := 0; a < k; a++ {
			t += c.U[p*k+a] * v[a]
		}
		w[p] = t
	}
	var l float64
	for r := rest; r < len(y); r++ {
		var pred float64
		for p := 0; p < d; p++ {
			pred += x[r][p] * w[p]
		}
		if !c.Logistic {
			l += (pred - y[r]) * (pred - y[r])
		} else if pred*y[r] <= 0 {
			l++
		}
	}
	return l / float64(len(y)-rest), true
}

// logisticNewton minimizes (1/b)Σ log(1+exp(−y_j a_j·v)) + (λ/2)‖v‖² by
// at most 12 damped Newton steps from v = 0 (a: b×k).
func logisticNewton(a, y []float64, b, k int, lambda float64, v []float64) {
	clear(v)
	if b == 0 {
		return
	}
	gk := make([]float64, k*k)
	h := make([]float64, k)
	for it := 0; it < 12; it++ {
		clear(gk)
		for q := 0; q < k; q++ {
			h[q] = -lambda * v[q]
			gk[q*k+q] = lambda
		}
		for j := 0; j < b; j++ {
			aj := a[j*k : (j+1)*k]
			var z float64
			for q := 0; q < k; q++ {
				z += aj[q] * v[q]
			}
			yj := y[j]
			s := 1 / (1 + math.Exp(yj*z))
			wt := s * (1 - s) / float64(b)
			for q := 0; q < k; q++ {
				h[q] += yj * s * aj[q] / float64(b)
				for r := 0; r < k; r++ {
					gk[q*k+r] += wt * aj[q] * aj[r]
				}
			}
		}
		if !solveSmallSPD(gk, h, k) {
			break
		}
		var step float64
		for q := 0; q < k; q++ {
			v[q] += h[q]
			step = math.Max(step, math.Abs(h[q]))
		}
		if step < 1e-10 {
			break
		}
	}
	if !allFinite(v) {
		clear(v)
	}
}

// solveSmallSPD solves g·x = h in place (h becomes x) for a k×k
// symmetric g (overwritten by its Cholesky factor); false when g is not
// numerically positive definite.
func solveSmallSPD(g, h []float64, k int) bool {
	maxd := 0.0
	for i := 0; i < k; i++ {
		maxd = math.Max(maxd, g[i*k+i])
	}
	if !(maxd > 0) || math.IsInf(maxd, 0) {
		return false
	}
	tol := 1e-11 * maxd
	for j := 0; j < k; j++ {
		s := g[j*k+j]
		for p := 0; p < j; p++ {
			s -= g[j*k+p] * g[j*k+p]
		}
		if !(s > tol) {
			return false
		}
		l := math.Sqrt(s)
		g[j*k+j] = l
		for i := j + 1; i < k; i++ {
			t := g[i*k+j]
			for p := 0; p < j; p++ {
				t -= g[i*k+p] * g[j*k+p]
			}
			g[i*k+j] = t / l
		}
	}
	for i := 0; i < k; i++ {
		t := h[i]
		for p := 0; p < i; p++ {
			t -= g[i*k+p] * h[p]
		}
		h[i] = t / g[i*k+i]
	}
	for i := k - 1; i >= 0; i-- {
		t := h[i]
		for p := i + 1; p < k; p++ {
			t -= g[p*k+i] * h[p]
		}
		h[i] = t / g[i*k+i]
	}
	return allFinite(h)
}

// pinvSolve sets v to the minimum-norm least-squares solution of a·v ≈ y
// (a: rows×k).
func pinvSolve(a []float64, rows, k int, y, v []float64) {
	clear(v)
	if rows == 0 {
		return
	}
	am := mat.NewDense(rows, k, append([]float64(nil), a[:rows*k]...))
	var svd mat.SVD
	if !svd.Factorize(am, mat.SVDThin) {
		return
	}
	s := svd.Values(nil)
	var u, w mat.Dense
	svd.UTo(&u)
	svd.VTo(&w)
	for j, sj := range s {
		if !(sj > 1e-12*s[0]) {
			continue
		}
		var cf float64
		for i := 0; i < rows; i++ {
			cf += u.At(i, j) * y[i]
		}
		cf /= sj
		for q := 0; q < k; q++ {
			v[q] += cf * w.At(q, j)
		}
	}
	if !allFinite(v) {
		clear(v)
	}
}

// norm2 is a scaled Euclidean norm that neither overflows nor underflows
// (the same arithmetic as the plugin's, so that clip decisions agree).
func norm2(x []float64) float64 {
	scale, ssq := 0.0, 1.0
	for _, v := range x {
		if v == 0 {
			continue
		}
		a := math.Abs(v)
		if scale < a {
			ssq = 1 + ssq*(scale/a)*(scale/a)
			scale = a
		} else {
			ssq += (a / scale) * (a / scale)
		}
	}
	return scale * math.Sqrt(ssq)
}

// allFinite reports whether every element is finite.
func allFinite(x []float64) bool {
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
