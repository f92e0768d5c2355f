package fedrep

import (
	"context"
	"math"

	"gonum.org/v1/gonum/mat"
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
	ridge  float64 // logistic local ridge
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

type workerScratch struct {
	a    []float64 // rows×k: X_B U
	ry   []float64 // rows: responses of the v-batch
	gk   []float64 // k×k
	h    []float64 // k
	v    []float64 // k
	w    []float64 // d: U v
	g    []float64 // d: Σ c_j x_j
	rows []int32   // the v-batch and gradient-batch row ids
}

func newFedrepEngine(x *mat.Dense, y []float64, lay *layout, k int, psi float64, loss lossKind) *fedrepEngine {
	raw := x.RawMatrix()
	n := lay.n()
	chunks := min(n, 64)
	e := &fedrepEngine{x: raw.Data, stride: raw.Stride, y: y, lay: lay, d: raw.Cols, k: k, psi: psi, loss: loss,
		ridge: 1e-3, chunks: chunks, part: make([][]float64, chunks), nclip: make([]int, chunks), nskip: make([]int, chunks)}
	for c := range e.part {
		e.part[c] = make([]float64, e.d*k)
	}
	rows := max(lay.maxM, 1)
	for w := 0; w < workers(chunks); w++ {
		e.ws = append(e.ws, &workerScratch{a: make([]float64, rows*k), ry: make([]float64, rows), gk: make([]float64, k*k),
			h: make([]float64, k), v: make([]float64, k), w: make([]float64, e.d), g: make([]float64, e.d), rows: make([]int32, 2*rows)})
	}
	return e
}

// row returns row r of X (no copy).
func (e *fedrepEngine) row(r int32) []float64 {
	o := int(r) * e.stride
	return e.x[o : o+e.d]
}

// localFit sets ws.v to the user's head for U on the rows: the least-squares
// (or ridge-logistic) solution, with the pseudo-inverse as fallback.
func (e *fedrepEngine) localFit(ws *workerScratch, u []float64, rows []int32, loss lossKind) {
	k, d := e.k, e.d
	b := len(rows)
	for j, r := range rows {
		xr := e.row(r)
		aj := ws.a[j*k : (j+1)*k]
		for a := range aj {
			aj[a] = 0
		}
		for p := 0; p < d; p++ {
			xp := xr[p]
			if xp == 0 {
				continue
			}
			up := u[p*k : (p+1)*k]
			for a := range aj {
				aj[a] += xp * up[a]
			}
		}
		ws.ry[j] = e.y[r]
	}
	switch loss {
	case lossSquared:
		for i := range ws.gk {
			ws.gk[i] = 0
		}
		for a := range ws.h {
			ws.h[a] = 0
		}
		for j := 0; j < b; j++ {
			aj := ws.a[j*k : (j+1)*k]
			for a := 0; a < k; a++ {
				ws.h[a] += aj[a] * ws.ry[j]
				for c := 0; c <= a; c++ {
					ws.gk[a*k+c] += aj[a] * aj[c]
				}
			}
		}
		for a := 0; a < k; a++ {
			for c := 0; c < a; c++ {
				ws.gk[c*k+a] = ws.gk[a*k+c]
			}
		}
		if b >= k && solveSmallSPD(ws.gk, ws.h, k) {
			copy(ws.v, ws.h)
			return
		}
		pinvSolve(ws.a, b, k, ws.ry, ws.v)
	case lossLogistic:
		logisticNewton(ws, b, k, e.ridge)
	}
}

// logisticNewton minimizes (1/b)Σ log(1+exp(−y_j a_j·v)) + (λ/2)‖v‖² by a
// fixed number of damped Newton steps from v = 0.
func logisticNewton(ws *workerScratch, b, k int, lambda float64) {
	v := ws.v
	for a := range v {
		v[a] = 0
	}
	if b == 0 {
		return
	}
	for it := 0; it < 12; it++ {
		for i := range ws.gk {
			ws.gk[i] = 0
		}
		for a := 0; a < k; a++ {
			ws.h[a] = -lambda * v[a]
			ws.gk[a*k+a] = lambda
		}
		for j := 0; j < b; j++ {
			aj := ws.a[j*k : (j+1)*k]
			var z float64
			for a := 0; a < k; a++ {
				z += aj[a] * v[a]
			}
			yj := ws.ry[j]
			s := 1 / (1 + math.Exp(yj*z)) // σ(−y z)
			wt := s * (1 - s) / float64(b)
			for a := 0; a < k; a++ {
				ws.h[a] += yj * s * aj[a] / float64(b)
				for c := 0; c < k; c++ {
					ws.gk[a*k+c] += wt * aj[a] * aj[c]
				}
			}
		}
		if !solveSmallSPD(ws.gk, ws.h, k) {
			break
		}
		var step float64
		for a := 0; a < k; a++ {
			v[a] += ws.h[a]
			step = math.Max(step, math.Abs(ws.h[a]))
		}
		if step < 1e-10 {
			break
		}
	}
	if !allFinite(v) {
		for a := range v {
			v[a] = 0
		}
	}
}

// userGradient sets ws.g so that ∇_U = ws.g · ws.vᵀ is the user's gradient of
// the mean loss over gRows at (U, v), after fitting v on vRows.
func (e *fedrepEngine) userGradient(ws *workerScratch, u []float64, vRows, gRows []int32) {
	k, d := e.k, e.d
	e.localFit(ws, u, vRows, e.loss)
	for p := 0; p < d; p++ {
		var s float64
		up := u[p*k : (p+1)*k]
		for a := 0; a < k; a++ {
			s += up[a] * ws.v[a]
		}
		ws.w[p] = s
	}
	for p := range ws.g {
		ws.g[p] = 0
	}
	b := float64(len(gRows))
	for _, r := range gRows {
		xr := e.row(r)
		var pred float64
		for p := 0; p < d; p++ {
			pred += xr[p] * ws.w[p]
		}
		yr := e.y[r]
		var c float64
		switch e.loss {
		case lossSquared:
			c = 2 * (pred - yr) / b
		case lossLogistic:
			c = -yr / (1 + math.Exp(yr*pred)) / b
		}
		if c == 0 {
			continue
		}
		for p := 0; p < d; p++ {
			ws.g[p] += c * xr[p]
		}
	}
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
	k := e.k
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
			e.userGradient(ws, u, vRows, gRows)
			if math.IsInf(e.psi, 1) {
				for p, gp := range ws.g {
					for a := 0; a < k; a++ {
						acc[p*k+a] += gp * ws.v[a]
					}
				}
				continue
			}
			ng, nv := norm2(ws.g), norm2(ws.v)
			if ng == 0 || nv == 0 || math.IsInf(ng, 0) || math.IsNaN(ng) || math.IsInf(nv, 0) || math.IsNaN(nv) {
				continue
			}
			nrm := ng * nv // ‖g vᵀ‖_F
			scale := math.Min(nrm, e.psi)
			if nrm > e.psi {
				e.nclip[c]++
			}
			for p, gp := range ws.g {
				gs := gp / ng * scale
				for a := 0; a < k; a++ {
					acc[p*k+a] += gs * (ws.v[a] / nv)
				}
			}
		}
	})
	if err != nil {
		return nil, 0, err
	}
	sum := make([]float64, e.d*k)
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
	k, d := e.k, e.d
	lossSum := make([]float64, e.chunks)
	cnt := make([]int, e.chunks)
	err := parallelChunks(ctx, e.chunks, func(w, c int) {
		ws := e.ws[w]
		lossSum[c], cnt[c] = 0, 0
		lo, hi := chunkBounds(n, e.chunks, c)
		for i := lo; i < hi; i++ {
			ur := e.lay.users[i]
			s, f := ur.t1, ur.f1
			if f == s || e.headAll {
				s = ur.t0
			}
			rows := ws.rows[:f-s]
			for j := range rows {
				rows[j] = int32(s + j)
			}
			e.localFit(ws, u, rows, e.loss)
			if heads != nil {
				copy(heads.RawRowView(i), ws.v)
			}
			if ur.h1 == ur.f1 {
				continue
			}
			for p := 0; p < d; p++ {
				var t float64
				for a := 0; a < k; a++ {
					t += u[p*k+a] * ws.v[a]
				}
				ws.w[p] = t
			}
			var l float64
			for r := ur.f1; r < ur.h1; r++ {
				xr := e.row(int32(r))
				var pred float64
				for p := 0; p < d; p++ {
					pred += xr[p] * ws.w[p]
				}
				if e.loss == lossSquared {
					l += (pred - e.y[r]) * (pred - e.y[r])
				} else if pred*e.y[r] <= 0 {
					l++
				}
			}
			lossSum[c] += l / float64(ur.h1-ur.f1)
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
			e.userGradient(ws, u, vRows, gRows)
			nrm := norm2(ws.g) * norm2(ws.v)
			if math.IsNaN(nrm) || math.IsInf(nrm, 0) {
				nrm = 0
			}
			out[i] = nrm
		}
	})
	return out, err
}

// validationScore returns (1/n) Σ_i s_i with s_i ∈ [0, 1] user i's
// leave-one-out score for U on the rows its final head is fitted on (S⁰ ∪
// S¹, or S¹ alone with head_data=local; S⁰ when S¹ is empty): for each of
// those m rows in turn, the head is fitted on the other m − 1 rows and the
// held-back row is predicted; s_i is the fraction of signs predicted right
// (accuracy) or 1 − the mean of min(1, squared error) (squared). The head
// of each fold sees one row fewer than the final head, so the score ranks
// candidates as the final heads will be judged on new rows (a split into
// halves would fit the heads on half the rows, which favours small ranks).
// A user with fewer than 2 such rows, or whose computation is not finite,
// scores 0. Each s_i depends on user i's rows (and U) only, so the score
// moves by at most 1/n when one user is replaced (DERIVATIONS.md §13).
func (e *fedrepEngine) validationScore(ctx context.Context, u []float64, accuracy bool) (float64, error) {
	n := e.lay.n()
	sums := make([]float64, e.chunks)
	err := parallelChunks(ctx, e.chunks, func(w, c int) {
		ws := e.ws[w]
		sums[c] = 0
		lo, hi := chunkBounds(n, e.chunks, c)
		for i := lo; i < hi; i++ {
			s := e.userLOO(ws, u, e.lay.users[i], accuracy)
			if math.IsNaN(s) || s < 0 || s > 1 {
				s = 0
			}
			sums[c] += s
		}
	})
	if err != nil {
		return 0, err
	}
	var tot float64
	for _, s := range sums {
		tot += s
	}
	return tot / float64(n), nil
}

// userLOO is one user's leave-one-out score of validationScore.
func (e *fedrepEngine) userLOO(ws *workerScratch, u []float64, ur userRows, accuracy bool) float64 {
	k, d := e.k, e.d
	s0, s1 := ur.t1, ur.f1 // the final head's rows
	if s1 == s0 || e.headAll {
		s0 = ur.t0
	}
	m := s1 - s0
	if m < 2 {
		return 0
	}
	var s float64
	for out := s0; out < s1; out++ {
		rows := ws.rows[:0]
		for r := s0; r < s1; r++ {
			if r != out {
				rows = append(rows, int32(r))
			}
		}
		e.localFit(ws, u, rows, e.loss)
		xr := e.row(int32(out))
		var pred float64
		for p := 0; p < d; p++ {
			up := u[p*k : (p+1)*k]
			var t float64
			for a := 0; a < k; a++ {
				t += up[a] * ws.v[a]
			}
			pred += xr[p] * t
		}
		if accuracy {
			if signLabel(pred) == signLabel(e.y[out]) {
				s++
			}
		} else {
			s += 1 - math.Min(1, (pred-e.y[out])*(pred-e.y[out]))
		}
	}
	return s / float64(m)
}

// signLabel is the ±1 label of a score: +1 where s > 0, −1 elsewhere.
func signLabel(s float64) float64 {
	if s > 0 {
		return 1
	}
	return -1
}
