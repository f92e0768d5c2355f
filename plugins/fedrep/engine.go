package fedrep

import (
	"context"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/kernel"
)

// lossKind selects the per-sample loss of the FedRep rounds.
type lossKind int

const (
	// lossSquared is (y − ⟨x, Uv⟩)², the regression loss of Private FedRep.
	lossSquared lossKind = iota
	// lossLogistic is log(1 + exp(−y⟨x, Uv⟩)) for ±1 labels (the smooth
	// surrogate of DERIVATIONS.md §6).
	lossLogistic
)

// fedrepEngine computes one FedRep round's aggregate Σ_i clip(∇_i, ψ) over
// all users, in parallel, with per-worker scratch and per-chunk partial sums
// reduced in a fixed order (bit-reproducible whatever the thread count).
type fedrepEngine struct {
	x      []float64 // row-major data, stride d (read only)
	stride int
	y      []float64
	lay    *layout
	d, k   int
	psi    float64 // clip ψ; +Inf disables clipping (non-private)
	loss   lossKind
	theory bool
	batch  int
	// headAll: final heads use S⁰ ∪ S¹ instead of S¹.
	headAll bool
	perm    []int32 // theory mode: per user, a permutation of its training rows
	chunks  int
	ws      []*workerScratch
	part    [][]float64 // chunks × d·k partial sums
	nclip   []int       // chunks: users whose gradient was clipped
	nskip   []int       // chunks: users who sat the round out (theory mode)
	altmin  *altminBuf  // Priv-AltMin statistics buffers (nil until first used)
}

// workerScratch is one worker's buffers: the per-user kernels' scratch and
// the row ids of a user's batches.
type workerScratch struct {
	ks   kernel.Scratch
	rows []int32 // the v-batch and gradient-batch row ids
}

func newFedrepEngine(x *mat.Dense, y []float64, lay *layout, k int, psi float64, loss lossKind) *fedrepEngine {
	raw := x.RawMatrix()
	n := lay.n()
	chunks := min(n, 64)
	e := &fedrepEngine{x: raw.Data, stride: raw.Stride, y: y, lay: lay, d: raw.Cols, k: k, psi: psi, loss: loss,
		chunks: chunks, part: make([][]float64, chunks), nclip: make([]int, chunks), nskip: make([]int, chunks)}
	for c := range e.part {
		e.part[c] = make([]float64, e.d*k)
	}
	rows := max(lay.maxM, 1)
	for w := 0; w < workers(chunks); w++ {
		e.ws = append(e.ws, &workerScratch{rows: make([]int32, 2*rows)})
	}
	return e
}

// row returns row r of X (no copy).
func (e *fedrepEngine) row(r int32) []float64 {
	o := int(r) * e.stride
	return e.x[o : o+e.d]
}

// model is the kernels' view of U and the loss.
func (e *fedrepEngine) model(u []float64, loss lossKind) kernel.Model {
	return kernel.Model{U: u, D: e.d, K: e.k, Logistic: loss == lossLogistic}
}

// pick returns views of the rows with the given ids and their responses
// (in ws's row buffers, valid until the next pick or span).
func (e *fedrepEngine) pick(ws *workerScratch, rows []int32) ([][]float64, []float64) {
	xs, ys := ws.ks.Rows(len(rows))
	for j, r := range rows {
		xs[j], ys[j] = e.row(r), e.y[r]
	}
	return xs, ys
}

// span returns views of the rows [lo, hi) and their responses.
func (e *fedrepEngine) span(ws *workerScratch, lo, hi int) ([][]float64, []float64) {
	xs, _ := ws.ks.Rows(hi - lo)
	for j := range xs {
		xs[j] = e.row(int32(lo + j))
	}
	return xs, e.y[lo:hi]
}

// localFit returns the user's head for U on the rows (kernel.Scratch.Head;
// a buffer of ws).
func (e *fedrepEngine) localFit(ws *workerScratch, u []float64, rows []int32, loss lossKind) []float64 {
	x, y := e.pick(ws, rows)
	return ws.ks.Head(e.model(u, loss), x, y)
}

// userGradient returns g and v with ∇_U = g vᵀ the user's gradient of the
// mean loss over gRows at (U, v), after fitting v on vRows (buffers of ws).
func (e *fedrepEngine) userGradient(ws *workerScratch, u []float64, vRows, gRows []int32) (g, v []float64) {
	m := e.model(u, e.loss)
	v = e.localFit(ws, u, vRows, e.loss)
	x, y := e.pick(ws, gRows)
	return ws.ks.Gradient(m, v, x, y), v
}

// batches returns the v-batch and gradient-batch rows of user i in round t.
func (e *fedrepEngine) batches(ws *workerScratch, i, t int) (vRows, gRows []int32) {
	ur := e.lay.users[i]
	if !e.theory {
		m0 := ur.t1 - ur.t0
		for j := 0; j < m0; j++ {
			ws.rows[j] = int32(ur.t0 + j)
		}
		return ws.rows[:m0], ws.rows[:m0]
	}
	// Theory mode: round t takes the rows [2bt, 2bt + 2b) of the user's
	// random order. A user whose training half cannot feed round t sits the
	// round out (zero contribution): the decision depends on that user's
	// own rows only (DERIVATIONS.md §3.3).
	p := e.perm[ur.t0:ur.t1]
	b := e.batch
	if 2*b*(t+1) > len(p) {
		return nil, nil
	}
	return p[2*b*t : 2*b*t+b], p[2*b*t+b : 2*b*t+2*b]
}

// aggregate returns Σ_i clip(∇_i(U), ψ) (d×k, row-major, a fresh slice) and
// the number of users whose gradient was clipped. Users whose computation
// is not finite (adversarial data), and users without rows for round t,
// contribute zero; skipped reports how many sat the round out.
func (e *fedrepEngine) aggregate(ctx context.Context, u []float64, t int) ([]float64, int, error) {
	n := e.lay.n()
	err := parallelChunks(ctx, e.chunks, func(w, c int) {
		ws := e.ws[w]
		acc := e.part[c]
		for i := range acc {
			acc[i] = 0
		}
		e.nclip[c], e.nskip[c] = 0, 0
		lo, hi := chunkBounds(n, e.chunks, c)
		for i := lo; i < hi; i++ {
			vRows, gRows := e.batches(ws, i, t)
			if len(gRows) == 0 {
				e.nskip[c]++
				continue
			}
			g, v := e.userGradient(ws, u, vRows, gRows)
			if kernel.AddClippedOuter(acc, g, v, e.psi) {
				e.nclip[c]++
			}
		}
	})
	if err != nil {
		return nil, 0, err
	}
	sum := make([]float64, e.d*e.k)
	clipped := 0
	for c := 0; c < e.chunks; c++ {
		for i, v := range e.part[c] {
			sum[i] += v
		}
		clipped += e.nclip[c]
	}
	return sum, clipped, nil
}

// skipped returns how many users sat out the last aggregated round.
func (e *fedrepEngine) skipped() int {
	s := 0
	for _, v := range e.nskip {
		s += v
	}
	return s
}

// fitHeads fits every user's head on its local half S¹ (its training half
// when S¹ is empty) for U, and, when the user has hold-out rows, returns
// the mean over those users of the hold-out loss (squared error, or the
// 0-1 error for the logistic loss); NaN when no user has hold-out rows.
// heads may be nil.
func (e *fedrepEngine) fitHeads(ctx context.Context, u []float64, heads *mat.Dense) (float64, error) {
	n := e.lay.n()
	mod := e.model(u, e.loss)
	lossSum := make([]float64, e.chunks)
	cnt := make([]int, e.chunks)
	err := parallelChunks(ctx, e.chunks, func(w, c int) {
		ws := e.ws[w]
		lossSum[c], cnt[c] = 0, 0
		lo, hi := chunkBounds(n, e.chunks, c)
		for i := lo; i < hi; i++ {
			ur := e.lay.users[i]
			s, f := kernel.HeadRows(ur.t1-ur.t0, ur.f1-ur.t0, e.headAll)
			x, y := e.span(ws, ur.t0+s, ur.t0+f)
			v := ws.ks.Head(mod, x, y)
			if heads != nil {
				copy(heads.RawRowView(i), v)
			}
			if ur.h1 == ur.f1 {
				continue
			}
			x, y = e.span(ws, ur.f1, ur.h1)
			lossSum[c] += ws.ks.MeanLoss(mod, v, x, y)
			cnt[c]++
		}
	})
	if err != nil {
		return 0, err
	}
	var tot float64
	var m int
	for c := range lossSum {
		tot += lossSum[c]
		m += cnt[c]
	}
	if m == 0 {
		return math.NaN(), nil
	}
	return tot / float64(m), nil
}

// gradNorms returns every user's unclipped gradient norm ‖∇_i‖_F = ‖g‖‖v‖
// at U for round t's rows (0 for a user who sits the round out or whose
// computation is not finite), for the private quantile of DERIVATIONS.md §12.
func (e *fedrepEngine) gradNorms(ctx context.Context, u []float64, t int) ([]float64, error) {
	n := e.lay.n()
	out := make([]float64, n)
	err := parallelChunks(ctx, e.chunks, func(w, c int) {
		ws := e.ws[w]
		lo, hi := chunkBounds(n, e.chunks, c)
		for i := lo; i < hi; i++ {
			vRows, gRows := e.batches(ws, i, t)
			if len(gRows) == 0 {
				continue
			}
			out[i] = kernel.OuterNorm(e.userGradient(ws, u, vRows, gRows))
		}
	})
	return out, err
}

// validationScores returns s_i ∈ [0, 1], each user i's
// leave-one-out score for U on the rows its final head is fitted on (S⁰ ∪
// S¹, or S¹ alone with head_data=local; S⁰ when S¹ is empty): for each of
// those m rows in turn, the head is fitted on the other m − 1 rows and the
// held-back row is predicted; s_i is the fraction of signs predicted right
// (accuracy) or 1 − the mean of min(1, squared error) (squared). The head
// of each fold sees one row fewer than the final head, so the score ranks
// candidates as the final heads will be judged on new rows (a split into
// halves would fit the heads on half the rows, which favours small ranks).
// A user with fewer than 2 such rows, or whose computation is not finite,
// scores 0. Each s_i depends on user i's rows (and U) only, so their mean
// moves by at most 1/n when one user is replaced (DERIVATIONS.md §13).
func (e *fedrepEngine) validationScores(ctx context.Context, u []float64, accuracy bool) ([]float64, error) {
	n := e.lay.n()
	m := e.model(u, e.loss)
	out := make([]float64, n)
	err := parallelChunks(ctx, e.chunks, func(w, c int) {
		ws := e.ws[w]
		lo, hi := chunkBounds(n, e.chunks, c)
		for i := lo; i < hi; i++ {
			ur := e.lay.users[i]
			s, f := kernel.HeadRows(ur.t1-ur.t0, ur.f1-ur.t0, e.headAll)
			x, y := e.span(ws, ur.t0+s, ur.t0+f)
			out[i] = ws.ks.LeaveOneOut(m, x, y, accuracy)
		}
	})
	return out, err
}
