package kernel

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// The per-user kernels of the personalization estimators (plugins/fedrep)
// and of the users pass kinds (engine/pass/users.go): each takes one
// user's rows (x[j] the working features of row j, y[j] its response, in
// data order) and the public side inputs (the representation U, d×k
// row-major, and the loss), and returns that user's term, bounded by its
// clip. A sum over n users of terms each bounded by c in Frobenius norm
// moves by at most 2c when one user's whole data is replaced (c when one
// user is added or removed): that is the sensitivity every estimator
// charges for these sums.

// LogisticRidge is the ridge λ of the users' local logistic fits.
const LogisticRidge = 1e-3

// SafeNorm is a scaled Euclidean norm that neither overflows nor
// underflows: every per-user clip decision uses it, so that all callers
// decide alike.
func SafeNorm(x []float64) float64 {
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

// AllFinite reports whether every element is finite.
func AllFinite(x []float64) bool {
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// SolveSPD solves g·x = h in place (h becomes x) for a k×k symmetric g
// (row-major, overwritten by its Cholesky factor); false when g is not
// numerically positive definite (a pivot ≤ 1e-11·the largest diagonal).
func SolveSPD(g, h []float64, k int) bool {
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
	for i := 0; i < k; i++ { // forward: L z = h
		t := h[i]
		for p := 0; p < i; p++ {
			t -= g[i*k+p] * h[p]
		}
		h[i] = t / g[i*k+i]
	}
	for i := k - 1; i >= 0; i-- { // backward: Lᵀ x = z
		t := h[i]
		for p := i + 1; p < k; p++ {
			t -= g[p*k+i] * h[p]
		}
		h[i] = t / g[i*k+i]
	}
	return AllFinite(h)
}

// PinvSolve sets v to the minimum-norm least-squares solution of a·v ≈ y
// (a: rows×k row-major, singular values below 1e-12 of the largest
// dropped; zero when not finite): the rare fallback of the local solves
// (it allocates).
func PinvSolve(a []float64, rows, k int, y, v []float64) {
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
	if !AllFinite(v) {
		clear(v)
	}
}

// Model is the public side of the head and gradient kernels: the
// representation U (D×K row-major) and the loss.
type Model struct {
	U        []float64
	D, K     int
	Logistic bool // false: squared loss; true: logistic loss on ±1 labels
	// Ridge is the squared-loss head's ridge relative to its features'
	// scale: Head adds λ = Ridge·tr(AᵀA)/K to AᵀA, A the user's rows
	// projected on U (0: plain least squares). It is scale-free, so a
	// public constant serves every data scale.
	Ridge float64
}

// Scratch is one worker's buffers for the per-user kernels, grown on
// demand and reused across users (the kernels allocate nothing else on
// their usual path).
type Scratch struct {
	a, gk, h, v, w, g []float64
	vh, h2, hb        []float64 // AddAltMin's
	lx                [][]float64
	ly                []float64
}

// grow sizes the buffers for rows rows of a model.
func (s *Scratch) grow(rows int, m Model) {
	if cap(s.a) < rows*m.K {
		s.a = make([]float64, rows*m.K)
	}
	if len(s.gk) != m.K*m.K {
		s.gk, s.h, s.v = make([]float64, m.K*m.K), make([]float64, m.K), make([]float64, m.K)
	}
	if len(s.w) != m.D {
		s.w, s.g = make([]float64, m.D), make([]float64, m.D)
	}
}

// project sets a (length k) to Uᵀx for a row x of length d.
func project(m Model, x, a []float64) {
	k := m.K
	clear(a)
	for p, xp := range x[:m.D] {
		if xp == 0 {
			continue
		}
		up := m.U[p*k : (p+1)*k]
		for q := range a {
			a[q] += xp * up[q]
		}
	}
}

// resize returns b with length n, reallocated only when too small.
func resize(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}

// Head fits the user's head v on the rows for U, into a buffer of s
// (valid until s is used again): least squares through the k×k normal
// equations (the pseudo-inverse when they are singular or there are
// fewer rows than k; ridge regression with m.Ridge > 0), or ridge
// logistic regression (LogisticRidge). Rows and responses are not
// modified.
func (s *Scratch) Head(m Model, x [][]float64, y []float64) []float64 {
	k := m.K
	b := len(y)
	s.grow(b, m)
	a := s.a[:b*k]
	for j := 0; j < b; j++ {
		project(m, x[j], a[j*k:(j+1)*k])
	}
	if m.Logistic {
		s.logisticNewton(b, k, y)
		return s.v
	}
	gk, h := s.gk, s.h
	clear(gk)
	clear(h)
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
	ridged := false
	if m.Ridge > 0 {
		var tr float64
		for q := 0; q < k; q++ {
			tr += gk[q*k+q]
		}
		for q := 0; q < k; q++ {
			gk[q*k+q] += m.Ridge * tr / float64(k)
		}
		ridged = tr > 0
	}
	if (ridged || b >= k) && SolveSPD(gk, h, k) {
		copy(s.v, h)
		return s.v
	}
	PinvSolve(a, b, k, y, s.v)
	return s.v
}

// logisticNewton sets s.v to the minimizer of (1/b)Σ log(1+exp(−y_j a_j·v))
// + (λ/2)‖v‖² (a = s.a, b×k) by at most 12 damped Newton steps from v = 0.
func (s *Scratch) logisticNewton(b, k int, y []float64) {
	v, gk, h := s.v, s.gk, s.h
	clear(v)
	if b == 0 {
		return
	}
	for it := 0; it < 12; it++ {
		clear(gk)
		for q := 0; q < k; q++ {
			h[q] = -LogisticRidge * v[q]
			gk[q*k+q] = LogisticRidge
		}
		for j := 0; j < b; j++ {
			aj := s.a[j*k : (j+1)*k]
			var z float64
			for q := 0; q < k; q++ {
				z += aj[q] * v[q]
			}
			yj := y[j]
			sg := 1 / (1 + math.Exp(yj*z)) // σ(−y z)
			wt := sg * (1 - sg) / float64(b)
			for q := 0; q < k; q++ {
				h[q] += yj * sg * aj[q] / float64(b)
				for r := 0; r < k; r++ {
					gk[q*k+r] += wt * aj[q] * aj[r]
				}
			}
		}
		if !SolveSPD(gk, h, k) {
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
	if !AllFinite(v) {
		clear(v)
	}
}

// predictor sets and returns s.w = U v.
func (s *Scratch) predictor(m Model, v []float64) []float64 {
	k := m.K
	for p := range s.w[:m.D] {
		var t float64
		up := m.U[p*k : (p+1)*k]
		for a := 0; a < k; a++ {
			t += up[a] * v[a]
		}
		s.w[p] = t
	}
	return s.w
}

// Gradient returns g (a buffer of s) such that g vᵀ is the gradient in U
// of the mean loss over the rows at (U, v): g = (1/b) Σ_j c_j x_j with
// c_j = 2(⟨x_j, Uv⟩ − y_j) (squared) or −y_j σ(−y_j⟨x_j, Uv⟩)
// (logistic). v must not be a buffer of s other than the one Head
// returned.
func (s *Scratch) Gradient(m Model, v []float64, x [][]float64, y []float64) []float64 {
	d := m.D
	s.grow(0, m)
	w := s.predictor(m, v)
	g := s.g
	clear(g)
	b := float64(len(y))
	for j, xr := range x[:len(y)] {
		var pred float64
		for p := 0; p < d; p++ {
			pred += xr[p] * w[p]
		}
		var cf float64
		if m.Logistic {
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
	return g
}

// UserGradient is the term of users.gradient for a user whose head is
// fitted on the rows (xv, yv) and whose gradient is taken over (xg, yg)
// (the same rows outside theory mode): it returns g and v with g vᵀ the
// gradient, both buffers of s.
func (s *Scratch) UserGradient(m Model, xv [][]float64, yv []float64, xg [][]float64, yg []float64) (g, v []float64) {
	v = s.Head(m, xv, yv)
	return s.Gradient(m, v, xg, yg), v
}

// OuterNorm is ‖g vᵀ‖_F = ‖g‖‖v‖, 0 when it is not finite: the value a
// user adds to the gradient-norm histogram (users.gradient_hist, one
// count per user: sensitivity 2 in ℓ₁ under replace-one).
func OuterNorm(g, v []float64) float64 {
	nrm := SafeNorm(g) * SafeNorm(v)
	if math.IsNaN(nrm) || math.IsInf(nrm, 0) {
		return 0
	}
	return nrm
}

// AddClippedOuter adds g vᵀ·min(1, clip/‖g vᵀ‖_F) to acc (len(g)×len(v),
// row-major) and reports whether the clip shrank it: the Frobenius
// clipping of a user's gradient (‖term‖_F ≤ clip). With clip = +Inf the
// term is added as it is; otherwise a term that is zero or not finite adds
// nothing.
func AddClippedOuter(acc, g, v []float64, clip float64) bool {
	k := len(v)
	if math.IsInf(clip, 1) {
		for p, gp := range g {
			for a := 0; a < k; a++ {
				acc[p*k+a] += gp * v[a]
			}
		}
		return false
	}
	ng, nv := SafeNorm(g), SafeNorm(v)
	if ng == 0 || nv == 0 || math.IsInf(ng, 0) || math.IsNaN(ng) || math.IsInf(nv, 0) || math.IsNaN(nv) {
		return false
	}
	nrm := ng * nv
	scale := math.Min(nrm, clip)
	for p, gp := range g {
		gs := gp / ng * scale
		for a := 0; a < k; a++ {
			acc[p*k+a] += gs * (v[a] / nv)
		}
	}
	return nrm > clip
}

// MeanLoss is the mean loss over the rows of the predictions ⟨x_j, Uv⟩:
// the squared error, or the 0-1 error for the logistic loss (the
// per-user value of users.holdout; unbounded, not private).
func (s *Scratch) MeanLoss(m Model, v []float64, x [][]float64, y []float64) float64 {
	d := m.D
	s.grow(0, m)
	w := s.predictor(m, v)
	var l float64
	for r, xr := range x[:len(y)] {
		var pred float64
		for p := 0; p < d; p++ {
			pred += xr[p] * w[p]
		}
		if !m.Logistic {
			l += (pred - y[r]) * (pred - y[r])
		} else if pred*y[r] <= 0 {
			l++
		}
	}
	return l / float64(len(y))
}

// HeadRows returns the rows [lo, hi) of a user split as (m0, rest) (see
// engine/pass.UserSplit) its final head is fitted on: the local rows
// [m0, rest), or the training rows as well with headAll or when there are
// no local rows.
func HeadRows(m0, rest int, headAll bool) (lo, hi int) {
	if rest == m0 || headAll {
		return 0, rest
	}
	return m0, rest
}

// LeaveOneOut is a user's leave-one-out score s ∈ [0, 1] of U on the rows
// (x, y): for each row in turn the head is fitted on the other rows and
// the row is predicted; s is the fraction of signs predicted right
// (accuracy) or 1 − the mean of min(1, squared error). A user with exactly
// two rows scores their contrast instead (Contrast: a head fitted on one
// row cannot tell two labels apart, so its prediction says nothing about
// U). A user with fewer than two rows, or whose score is not a number in
// [0, 1], scores 0: the score moves by at most 1 when the user's data is
// replaced.
func (s *Scratch) LeaveOneOut(m Model, x [][]float64, y []float64, accuracy bool) float64 {
	n := len(y)
	if n < 2 {
		return 0
	}
	if n == 2 {
		return s.Contrast(m, x[0], x[1], y[0] != y[1])
	}
	var sc float64
	for out := 0; out < n; out++ {
		s.lx, s.ly = append(append(s.lx[:0], x[:out]...), x[out+1:n]...), append(append(s.ly[:0], y[:out]...), y[out+1:]...)
		v := s.Head(m, s.lx, s.ly)
		w := s.predictor(m, v)
		var pred float64
		for p, xp := range x[out][:m.D] {
			pred += xp * w[p]
		}
		if accuracy {
			if (pred > 0) == (y[out] > 0) {
				sc++
			}
		} else {
			sc += 1 - math.Min(1, (pred-y[out])*(pred-y[out]))
		}
	}
	sc /= float64(n)
	if math.IsNaN(sc) || sc < 0 || sc > 1 {
		return 0
	}
	return sc
}

// Contrast is the score of a user with two rows x1, x2 whose labels
// differ: the cosine of the angle between x1 − x2 and span(U),
// ‖Uᵀ(x1 − x2)‖/‖x1 − x2‖ for orthonormal U, clamped to [0, 1] (0 when
// the labels agree or the rows are equal). The head fitted on both rows
// separates them only along what U keeps of their difference.
func (s *Scratch) Contrast(m Model, x1, x2 []float64, differ bool) float64 {
	s.grow(1, m)
	diff, a := s.g, s.a[:m.K]
	for p := range diff {
		diff[p] = x1[p] - x2[p]
	}
	project(m, diff, a)
	c := math.Sqrt(floats.Dot(a, a) / floats.Dot(diff, diff))
	if !differ || !(c >= 0) {
		return 0
	}
	return math.Min(c, 1)
}

// Ustat prepares a user's U-statistic term of users.ustat from its m0
// training rows,
//
//	Z = (s sᵀ − Σ_j y_j² x_j x_jᵀ)/(m0(m0−1)),  s = Σ_j y_j x_j,
//
// the unbiased estimate of w wᵀ, without forming it: with the rescaled
// rows ã_j = (y_j/c_y)(x_j/c_x) (c_x, c_y the user's largest |x| and |y|,
// so nothing overflows) written to at and r_j = Σ_{l≠j} ã_l (prefix and
// suffix sums, no cancellation) to rt (m0×d row-major each),
// clip(Z, clip) = f·Σ_j ã_j r_jᵀ. It returns f, z an upper bound on the
// unclipped ‖Z‖_F (rounding included, so the clipped term never exceeds
// clip), and whether the clip shrank the term; ok is false for a user
// without a term (fewer than two rows, a zero scale, a zero or NaN norm).
// prefix (d) and prod (d×d, used when m0 ≥ d) are scratch. clip = +Inf:
// no clipping.
func Ustat(x [][]float64, y []float64, d int, clip float64, at, rt, prefix, prod []float64) (f, z float64, clipped, ok bool) {
	m0 := len(y)
	if m0 < 2 {
		return 0, 0, false, false
	}
	var cx, cy float64
	for j := 0; j < m0; j++ {
		cy = math.Max(cy, math.Abs(y[j]))
		for _, v := range x[j][:d] {
			cx = math.Max(cx, math.Abs(v))
		}
	}
	if cx == 0 || cy == 0 {
		return 0, 0, false, false
	}
	for j := 0; j < m0; j++ {
		yj := y[j] / cy
		aj := at[j*d : (j+1)*d]
		for p, v := range x[j][:d] {
			aj[p] = yj * (v / cx)
		}
	}
	clear(prefix)
	for j := 0; j < m0; j++ {
		copy(rt[j*d:(j+1)*d], prefix)
		for p, v := range at[j*d : (j+1)*d] {
			prefix[p] += v
		}
	}
	clear(prefix)
	for j := m0 - 1; j >= 0; j-- {
		rj := rt[j*d : (j+1)*d]
		for p := range rj {
			rj[p] += prefix[p]
		}
		for p, v := range at[j*d : (j+1)*d] {
			prefix[p] += v
		}
	}
	nrm := ustatNormBound(at[:m0*d], rt[:m0*d], m0, d, prod)
	if nrm == 0 || math.IsNaN(nrm) {
		return 0, 0, false, false
	}
	f = (cy * cx) * (cy * cx) / float64(m0*(m0-1))
	z = nrm * f
	if z > clip || math.IsInf(z, 1) {
		f, clipped = clip/nrm, true
	}
	return f, z, clipped, true
}

// ustatNormBound is an upper bound on ‖Σ_j a_j r_jᵀ‖_F with its rounding
// error: from the explicit product (into prod) when m0 ≥ d, from the
// m0×m0 Grams ‖ÃᵀR‖² = Σ_{jl} (ã_j·ã_l)(r_j·r_l) otherwise.
func ustatNormBound(at, rt []float64, m0, d int, prod []float64) float64 {
	const unit = 0x1p-53
	if m0 >= d {
		blas64.Gemm(blas.Trans, blas.NoTrans, 1,
			blas64.General{Rows: m0, Cols: d, Stride: d, Data: at}, blas64.General{Rows: m0, Cols: d, Stride: d, Data: rt},
			0, blas64.General{Rows: d, Cols: d, Stride: d, Data: prod[:d*d]})
		return SafeNorm(prod[:d*d]) * (1 + 4*float64(m0+d)*unit)
	}
	var sum, bound float64
	for j := 0; j < m0; j++ {
		aj, rj := at[j*d:(j+1)*d], rt[j*d:(j+1)*d]
		bound += SafeNorm(aj) * SafeNorm(rj)
		for l := 0; l <= j; l++ {
			al, rl := at[l*d:(l+1)*d], rt[l*d:(l+1)*d]
			var ga, gr float64
			for p := 0; p < d; p++ {
				ga += aj[p] * al[p]
				gr += rj[p] * rl[p]
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

// UnitHead sets vh = v/‖v‖ and returns ‖v‖; ok is false (a member that
// adds nothing to the Priv-AltMin statistics) when v is zero or not
// finite.
func UnitHead(v, vh []float64) (nv float64, ok bool) {
	nv = SafeNorm(v)
	if nv == 0 || math.IsInf(nv, 0) || math.IsNaN(nv) {
		return nv, false
	}
	for a := range vh {
		vh[a] = v[a] / nv
	}
	return nv, true
}

// AltMinRow is one row of Priv-AltMin's U-step statistics for a member
// with head norm nv: W = clip₂(vec(x vᵀ), cw) = g ⊗ v̂ with
// g = min(‖x‖nv, cw)·x/‖x‖ written to g, and ỹ = max(−cy, min(cy, y))
// returned. ok is false for a row of zero or infinite norm (skipped).
// Each row thus adds W Wᵀ of norm ≤ cw² to a and ỹ W of norm ≤ cw·cy to b.
func AltMinRow(x []float64, y, nv, cw, cy float64, g []float64) (yt float64, ok bool) {
	nx := SafeNorm(x)
	if nx == 0 || math.IsInf(nx, 0) {
		return 0, false
	}
	t := math.Min(nx*nv, cw)
	yt = math.Max(-cy, math.Min(cy, y))
	sc := t / nx
	for p, xv := range x {
		g[p] = sc * xv
	}
	return yt, true
}

// AltMinSize is the length of AddAltMin's accumulator for dimension d
// and rank k: the k(k+1)/2 pair sums Σ_j v̂_a v̂_b H_j (a ≤ b), each the
// packed upper triangle of a d×d matrix (d(d+1)/2 values, row-major),
// then b (d·k).
func AltMinSize(d, k int) int { return k*(k+1)/2*d*(d+1)/2 + d*k }

// AddAltMin adds a member's Priv-AltMin statistics to acc (AltMinSize)
// for its head v fitted on its training rows (x, y), over its first
// min(portion, m0) rows: a_j = H ⊗ v̂v̂ᵀ with H = Σ_r g_r g_rᵀ, kept as its
// pair sums v̂_a v̂_b H (AltMinA expands them), and b_j = (Σ_r ỹ_r g_r) ⊗ v̂
// (AltMinRow; vec index p·k + a). A member whose head is zero or not
// finite adds nothing. The per-member term of users.altmin: with m
// members, ‖a‖_F ≤ m·portion·cw² and ‖b‖ ≤ m·portion·cw·cy.
func (s *Scratch) AddAltMin(m Model, x [][]float64, y []float64, cw, cy float64, portion int, acc []float64) {
	d, k := m.D, m.K
	tri := d * (d + 1) / 2
	v := s.Head(m, x, y)
	s.vh, s.h2, s.hb = resize(s.vh, k), resize(s.h2, tri), resize(s.hb, d)
	vh, h, hb, g := s.vh, s.h2, s.hb, s.g // h: H, packed upper triangle
	nv, ok := UnitHead(v, vh)
	if !ok {
		return
	}
	clear(h)
	clear(hb)
	for r := 0; r < min(portion, len(y)); r++ {
		yt, ok := AltMinRow(x[r][:d], y[r], nv, cw, cy, g)
		if !ok {
			continue
		}
		o := 0
		for p := 0; p < d; p++ {
			gp := g[p]
			hb[p] += yt * gp
			if gp != 0 {
				row := h[o : o+d-p]
				for q, gq := range g[p:d] {
					row[q] += gp * gq
				}
			}
			o += d - p
		}
	}
	pi := 0
	for a := 0; a < k; a++ {
		for b := a; b < k; b++ {
			f := vh[a] * vh[b]
			blk := acc[pi*tri : (pi+1)*tri]
			for i, hv := range h {
				blk[i] += f * hv
			}
			pi++
		}
	}
	bs := acc[k*(k+1)/2*tri:]
	for p := 0; p < d; p++ {
		for a := 0; a < k; a++ {
			bs[p*k+a] += hb[p] * vh[a]
		}
	}
}

// AltMinA expands AddAltMin's pair sums into a = Σ_j H_j ⊗ v̂_j v̂_jᵀ
// (dk×dk, row-major, exactly symmetric; vec index p·k + a) and returns it
// with b (a view of acc).
func AltMinA(acc []float64, d, k int) (a, b []float64) {
	dk, tri := d*k, d*(d+1)/2
	a = make([]float64, dk*dk)
	pair := func(x, y int) int { // index of the pair (min, max)
		x, y = min(x, y), max(x, y)
		return x*k - x*(x-1)/2 + (y - x)
	}
	o := 0
	for p := 0; p < d; p++ {
		for q := p; q < d; q++ {
			for x := 0; x < k; x++ {
				for y := 0; y < k; y++ {
					v := acc[pair(x, y)*tri+o+q-p]
					a[(p*k+x)*dk+q*k+y] = v
					a[(q*k+y)*dk+p*k+x] = v
				}
			}
		}
		o += d - p
	}
	return a, acc[k*(k+1)/2*tri:]
}

// The checks a host applies to a result claiming to sum these terms.

// checkCount checks that v is an integer count in [0, max].
func checkCount(name string, v float64, max int64) error {
	if v < 0 || v != math.Trunc(v) || v > float64(max) {
		return fmt.Errorf("%s = %v is not a count in [0, %d]", name, v, max)
	}
	return nil
}

// symmetric reports whether the n×n row-major v is exactly symmetric.
func symmetric(n int, v []float64) bool {
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if v[i*n+j] != v[j*n+i] {
				return false
			}
		}
	}
	return true
}

// CheckUsersSum checks a sum over users of terms clipped to clip (0 or
// +Inf: none): its norm is at most users·clip (CheckClippedSum), the
// clipped count is a count of users, and, for a U-statistic sum (sym,
// n×n), it is exactly symmetric.
func CheckUsersSum(sum []float64, n int, sym bool, users int64, clipped, clip float64) error {
	if sym && !symmetric(n, sum) {
		return fmt.Errorf("the U-statistic sum is not symmetric")
	}
	if err := checkCount("clipped", clipped, users); err != nil {
		return err
	}
	return CheckClippedSum(sum, users, clip)
}

// CheckAltMin checks Priv-AltMin's statistics a (dk×dk) and b of members
// users contributing at most portion rows each: a is symmetric,
// ‖a‖_F ≤ members·portion·cw² and ‖b‖ ≤ members·portion·cw·cy (rounding
// allowed for).
func CheckAltMin(a, b []float64, dk int, members, portion, cw, cy float64) error {
	if !symmetric(dk, a) {
		return fmt.Errorf("the statistic a is not symmetric")
	}
	if nrm, lim := Norm(a), members*portion*cw*cw; nrm > lim*(1+1e-9) {
		return fmt.Errorf("a has norm %.6g > members·portion·clip_w² = %.6g: the rows were not clipped", nrm, lim)
	}
	if nrm, lim := Norm(b), members*portion*cw*cy; nrm > lim*(1+1e-9) {
		return fmt.Errorf("b has norm %.6g > members·portion·clip_w·clip_y = %.6g: the rows were not clipped", nrm, lim)
	}
	return nil
}

// CheckHoldout checks the hold-out scalars: lossUsers a count of users,
// lossSum non-negative and, for the 0-1 loss, at most lossUsers.
func CheckHoldout(lossSum, lossUsers float64, users int64, zeroOne bool) error {
	if err := checkCount("loss_users", lossUsers, users); err != nil {
		return err
	}
	if lossSum < 0 || (zeroOne && lossSum > lossUsers) {
		return fmt.Errorf("loss_sum = %v is outside its range", lossSum)
	}
	return nil
}
