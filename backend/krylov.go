package backend

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// Defaults of the truncated solvers (see TruncOptions).
const (
	// DefaultTruncTol is the default bound on the subspace error.
	DefaultTruncTol = 1e-10
	// DefaultTruncMaxIter is the default limit on block operator products.
	DefaultTruncMaxIter = 100
	// DefaultTruncSeed seeds the random start block unless TruncOptions.Seed
	// is set, so results are reproducible.
	DefaultTruncSeed = 0x5eed_d91c
)

// TruncOptions tunes the block Krylov solvers EigSymTopKrylov and
// SVDTopKrylov (thick-restarted block Lanczos, stopped on the Davis–Kahan or
// Wedin bound; docs/benchmarks.md "Inside backend"). The zero value selects
// the defaults.
type TruncOptions struct {
	// Tol bounds ‖sin Θ‖_F between the returned and the exact leading
	// subspace (default DefaultTruncTol; must lie in [1e-14, 0.1]).
	Tol float64
	// MaxIter limits the number of block operator products (default
	// DefaultTruncMaxIter).
	MaxIter int
	// Oversample is the number of block columns beyond k (default
	// max(4, k/2)). Larger blocks need fewer, costlier iterations.
	Oversample int
	// MaxBasis caps the Krylov basis before a thick restart (default four
	// blocks, at most n).
	MaxBasis int
	// Seed seeds the random start block (0 selects DefaultTruncSeed). The
	// start block is not privacy noise: converged answers do not depend on
	// it beyond Tol.
	Seed uint64
}

// TruncInfo reports how a truncated solve went.
type TruncInfo struct {
	// Iterations counts block operator products.
	Iterations int
	// Restarts counts thick restarts.
	Restarts int
	// Basis is the final Krylov basis size.
	Basis int
	// Residual is ‖A·V − V·Λ‖_F (for the SVD ‖AᵀU − V·S‖_F) of the returned
	// pairs, measured with a fresh product.
	Residual float64
	// Gap is the estimated gap between the k-th value and the rest of the
	// spectrum.
	Gap float64
	// SubspaceBound is the a posteriori bound Residual/Gap on ‖sin Θ‖_F
	// (+Inf when Degenerate).
	SubspaceBound float64
	// Degenerate reports a k-th value repeated to working precision beyond
	// k, where the subspace is not unique (see TruncOptions).
	Degenerate bool
}

// blockSize returns the default block size for k wanted pairs.
func blockSize(k, oversample int) int {
	if oversample <= 0 {
		oversample = max(4, k/2)
	}
	return k + oversample
}

// UseTruncatedEig reports whether be's EigSymTop uses the block Krylov
// solver for the k leading eigenpairs of an n×n matrix rather than an exact
// solver. The crossovers were measured on the benchmark matrices
// (bench/results/backend.md): against gonum's full eigensolver Krylov wins
// from n ≈ 300; against LAPACK's dsyevr over an index range only from
// n ≈ 1000.
func UseTruncatedEig(be Backend, n, k int) bool {
	minDim := 300
	if be.Name() != "gonum" {
		minDim = 1000
	}
	return n >= minDim && 5*blockSize(k, 0) <= n
}

// UseTruncatedSVD reports whether be's SVDTop uses the block Krylov solver
// for the k leading singular triplets of a matrix whose smaller dimension is
// n rather than a full thin SVD (which has no partial variant in LAPACK).
func UseTruncatedSVD(be Backend, n, k int) bool {
	return n >= 200 && 5*blockSize(k, 0) <= n
}

func (o TruncOptions) resolve(n, k int) (TruncOptions, int, error) {
	if o.Tol == 0 {
		o.Tol = DefaultTruncTol
	}
	if !(o.Tol >= 1e-14 && o.Tol <= 0.1) {
		return o, 0, fmt.Errorf("truncated solver tolerance %g outside [1e-14, 0.1]", o.Tol)
	}
	if o.MaxIter == 0 {
		o.MaxIter = DefaultTruncMaxIter
	}
	if o.MaxIter < 1 || o.Oversample < 0 || o.MaxBasis < 0 {
		return o, 0, fmt.Errorf("truncated solver options: MaxIter %d, Oversample %d, MaxBasis %d must not be negative", o.MaxIter, o.Oversample, o.MaxBasis)
	}
	if o.Seed == 0 {
		o.Seed = DefaultTruncSeed
	}
	b := min(blockSize(k, o.Oversample), n)
	if o.MaxBasis == 0 {
		// Measured best on the benchmark matrices: small bases restarted
		// often beat large ones, whose O(d³) Rayleigh–Ritz steps dominate.
		o.MaxBasis = 4 * b
	}
	o.MaxBasis = min(n, max(o.MaxBasis, 2*b, k+1+b))
	return o, b, nil
}

// symOperator is a symmetric linear operator on R^n applied to blocks.
type symOperator struct {
	n   int
	mul func(dst, x *mat.Dense) // dst = A·x
}

// ritzCheck judges the k+1 leading Ritz values theta (descending) with
// residual norms res against the solver's tolerance; scale estimates ‖A‖.
type ritzCheck func(theta, res []float64, scale float64) verdict

// verdict is a ritzCheck's judgement.
type verdict struct {
	bound, gap, resid float64
	ok, degenerate    bool
	// stalled: every residual is at roundoff level yet the bound misses the
	// tolerance (the gap is too small for it); iterating cannot help.
	stalled bool
}

// roundoff is the residual level regarded as exact to working precision.
func roundoff(n int, scale float64) float64 {
	return 64 * 0x1p-52 * math.Sqrt(float64(n)) * scale
}

func frob(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

func maxAbs(v []float64) float64 {
	var m float64
	for _, x := range v {
		m = max(m, math.Abs(x))
	}
	return m
}

// eigCheck is the ritzCheck of the symmetric eigenproblem (Davis–Kahan).
func eigCheck(k, n int, tol float64) ritzCheck {
	return func(theta, res []float64, scale float64) verdict {
		rk := frob(res[:k])
		gap := math.Inf(1)
		if len(theta) > k {
			gap = theta[k-1] - theta[k] - res[k]
		}
		if gap > 0 && rk <= tol*gap {
			return verdict{bound: rk / gap, gap: gap, resid: rk, ok: true}
		}
		floor := roundoff(n, scale)
		atFloor := len(theta) > k && maxAbs(res) <= floor
		if atFloor && theta[k-1]-theta[k] <= floor {
			return verdict{bound: math.Inf(1), gap: theta[k-1] - theta[k], resid: rk, ok: true, degenerate: true}
		}
		return verdict{bound: rk / gap, gap: gap, resid: rk, stalled: atFloor}
	}
}

// svdCheck is the ritzCheck of the SVD through the eigenproblem of AᵀA
// (Ritz values θ = s²): Wedin's bound with right residuals res/s.
func svdCheck(k, n int, tol float64) ritzCheck {
	return func(theta, res []float64, scale float64) verdict {
		var rk float64
		for i := 0; i < k; i++ {
			s := math.Sqrt(max(theta[i], 0))
			if s == 0 {
				return verdict{bound: math.Inf(1), resid: math.Inf(1), stalled: maxAbs(res) <= roundoff(n, scale)}
			}
			rk += (res[i] / s) * (res[i] / s)
		}
		rk = math.Sqrt(rk)
		sk := math.Sqrt(theta[k-1])
		gap := math.Inf(1)
		if len(theta) > k {
			gap = sk - math.Sqrt(max(theta[k]+res[k], 0))
		}
		if gap > 0 && rk <= tol*gap {
			return verdict{bound: rk / gap, gap: gap, resid: rk, ok: true}
		}
		floor := roundoff(n, scale)
		atFloor := len(theta) > k && maxAbs(res) <= floor
		if atFloor && theta[k-1]-theta[k] <= floor && sk > math.Sqrt(floor) {
			return verdict{bound: math.Inf(1), gap: gap, resid: rk, ok: true, degenerate: true}
		}
		return verdict{bound: rk / gap, gap: gap, resid: rk, stalled: atFloor}
	}
}

// project removes from x its components in the span of the orthonormal
// columns of q: x ← x − q(qᵀx).
func project(q, x *mat.Dense) {
	qr, xr := q.RawMatrix(), x.RawMatrix()
	c := blas64.General{Rows: qr.Cols, Cols: xr.Cols, Stride: xr.Cols, Data: make([]float64, qr.Cols*xr.Cols)}
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, qr, xr, 0, c)
	blas64.Gemm(blas.NoTrans, blas.NoTrans, -1, qr, c, 1, xr)
}

// colVec is a BLAS view of column j of x.
func colVec(x *mat.Dense, j int) blas64.Vector {
	r := x.RawMatrix()
	return blas64.Vector{N: r.Rows, Inc: r.Stride, Data: r.Data[j:]}
}

func colNorm(x *mat.Dense, j int) float64 {
	return blas64.Nrm2(colVec(x, j))
}

func fillRandomCol(x *mat.Dense, j int, rng *rand.Rand) {
	n, _ := x.Dims()
	var s float64
	for i := 0; i < n; i++ {
		v := rng.NormFloat64()
		x.Set(i, j, v)
		s += v * v
	}
	s = 1 / math.Sqrt(s)
	for i := 0; i < n; i++ {
		x.Set(i, j, x.At(i, j)*s)
	}
}

// orthBlock returns an orthonormal basis of the columns of x (modified)
// orthogonalised against the orthonormal columns of q (nil for none).
// Columns that are numerically dependent on q or on earlier columns are
// replaced by random directions, so the result always has x's width; the
// caller guarantees that width plus q's fits in the dimension.
func orthBlock(be Backend, q, x *mat.Dense, rng *rand.Rand) (*mat.Dense, error) {
	_, c := x.Dims()
	var scale float64
	for j := 0; j < c; j++ {
		scale = max(scale, colNorm(x, j))
	}
	if scale == 0 {
		for j := 0; j < c; j++ {
			fillRandomCol(x, j, rng)
		}
		scale = 1
	}
	for attempt := 0; attempt < 6; attempt++ {
		if q != nil {
			project(q, x)
			project(q, x)
		}
		p, r, err := be.QR(x)
		if err != nil {
			return nil, fmt.Errorf("orthogonalising a Krylov block: %w", err)
		}
		bad := false
		rmin, rmax := math.Inf(1), 0.0
		for j := 0; j < c; j++ {
			rjj := math.Abs(r.At(j, j))
			rmin, rmax = min(rmin, rjj), max(rmax, rjj)
			if rjj <= 1e-10*scale {
				bad = true
				fillRandomCol(p, j, rng)
			}
		}
		if !bad {
			if q != nil && rmax > 1e3*rmin {
				// P = X·R⁻¹ magnifies X's residual components along q by
				// up to R's condition number; one more pass removes them.
				project(q, p)
				if p, _, err = be.QR(p); err != nil {
					return nil, fmt.Errorf("orthogonalising a Krylov block: %w", err)
				}
			}
			return p, nil
		}
		x, scale = p, 1
	}
	return nil, fmt.Errorf("orthogonalising a Krylov block: no independent direction found: %w", ErrNotConverged)
}

// residualNorms returns ‖ay_j − θ_j·y_j‖ for each column j.
func residualNorms(ay, y *mat.Dense, theta []float64) []float64 {
	n, m := y.Dims()
	out := make([]float64, m)
	for i := 0; i < n; i++ {
		yr, ar := y.RawRowView(i), ay.RawRowView(i)
		for j := 0; j < m; j++ {
			d := ar[j] - theta[j]*yr[j]
			out[j] += d * d
		}
	}
	for j := range out {
		out[j] = math.Sqrt(out[j])
	}
	return out
}

// blockKrylov finds the k leading (algebraically largest) eigenpairs of op
// by thick-restarted block Lanczos with full reorthogonalisation; check
// decides convergence. It returns k Ritz values and vectors (n×k).
func blockKrylov(be Backend, op symOperator, k int, o TruncOptions, b int, check ritzCheck) ([]float64, *mat.Dense, TruncInfo, error) {
	n, dmax := op.n, o.MaxBasis
	kk := min(k+1, n)
	rng := rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15))
	q := mat.NewDense(n, dmax, nil)
	w := mat.NewDense(n, dmax, nil)
	t := mat.NewDense(dmax, dmax, nil)
	var info TruncInfo
	p, err := orthBlock(be, nil, mat.NewDense(n, b, nil), rng)
	if err != nil {
		return nil, nil, info, err
	}
	d := 0
	for {
		_, c := p.Dims()
		qNew := q.Slice(0, n, d, d+c).(*mat.Dense)
		qNew.Copy(p)
		wNew := w.Slice(0, n, d, d+c).(*mat.Dense)
		op.mul(wNew, qNew)
		info.Iterations++
		qAll := q.Slice(0, n, 0, d+c).(*mat.Dense)
		wAll := w.Slice(0, n, 0, d+c).(*mat.Dense)
		tNew := t.Slice(0, d+c, d, d+c).(*mat.Dense)
		tNew.Mul(qAll.T(), wNew)
		symmetrizeNewBlock(t, d, c)
		d += c

		// Rayleigh–Ritz on the current basis.
		ts := mat.NewSymDense(d, nil)
		for i := 0; i < d; i++ {
			for j := i; j < d; j++ {
				ts.SetSym(i, j, t.At(i, j))
			}
		}
		theta, s, err := be.EigSym(ts)
		if err != nil {
			return nil, nil, info, fmt.Errorf("Rayleigh–Ritz step: %w", err)
		}
		m := min(kk, d)
		sm := s.Slice(0, d, 0, m)
		y := mat.NewDense(n, m, nil)
		y.Mul(qAll, sm)
		ay := mat.NewDense(n, m, nil)
		ay.Mul(wAll, sm)
		scale := max(math.Abs(theta[0]), math.Abs(theta[d-1]))
		res := residualNorms(ay, y, theta[:m])
		v := check(theta[:m], res, scale)
		if v.ok {
			// Confirm with a fresh product: the recurrences for A·Q
			// accumulate rounding over restarts.
			op.mul(ay, y)
			res = residualNorms(ay, y, theta[:m])
			v = check(theta[:m], res, scale)
		}
		info.Basis, info.Residual, info.Gap, info.SubspaceBound, info.Degenerate = d, v.resid, v.gap, v.bound, v.degenerate
		if v.ok {
			vals := append([]float64(nil), theta[:k]...)
			return vals, mat.DenseCopyOf(y.Slice(0, n, 0, k)), info, nil
		}
		if v.stalled {
			return nil, nil, info, fmt.Errorf("top-%d Krylov solve: residuals at roundoff but the gap %.3g is too small for tolerance %.3g (bound %.3g): %w",
				k, v.gap, o.Tol, v.bound, ErrNotConverged)
		}
		if info.Iterations >= o.MaxIter || d >= n {
			return nil, nil, info, fmt.Errorf("top-%d Krylov solve after %d block products: subspace bound %.3g > tolerance %.3g: %w",
				k, info.Iterations, v.bound, o.Tol, ErrNotConverged)
		}

		// The next block continues the Krylov sequence from the newest
		// image, orthogonalised against the whole basis.
		cNext := min(b, n-d)
		x := mat.NewDense(n, cNext, nil)
		x.Slice(0, n, 0, min(c, cNext)).(*mat.Dense).Copy(wNew)
		if p, err = orthBlock(be, qAll, x, rng); err != nil {
			return nil, nil, info, err
		}
		if d+cNext > dmax {
			// Thick restart: keep the leading Ritz vectors; the pending
			// block is orthogonal to them as it is to the whole old basis.
			keep := min(max(kk, dmax-2*b), dmax-cNext, d)
			thickRestart(q, w, t, qAll, wAll, s.Slice(0, d, 0, keep), theta[:keep])
			d = keep
			info.Restarts++
		}
	}
}

// symmetrizeNewBlock completes the projected matrix t after the block of
// c columns at d was added: the new rows mirror the old columns, and the
// new diagonal block is replaced by its symmetric part.
func symmetrizeNewBlock(t *mat.Dense, d, c int) {
	for i := d; i < d+c; i++ {
		for j := 0; j < d; j++ {
			t.Set(i, j, t.At(j, i))
		}
		for j := i + 1; j < d+c; j++ {
			v := 0.5 * (t.At(i, j) + t.At(j, i))
			t.Set(i, j, v)
			t.Set(j, i, v)
		}
	}
}

// thickRestart replaces the basis q and its images w by the Ritz vectors
// qAll·sk and their images wAll·sk (keep = len(theta) columns), and the
// projected matrix t by diag(theta) on its leading keep×keep block.
func thickRestart(q, w, t, qAll, wAll *mat.Dense, sk mat.Matrix, theta []float64) {
	n, _ := q.Dims()
	keep := len(theta)
	var nq, nw mat.Dense
	nq.Mul(qAll, sk)
	nw.Mul(wAll, sk)
	q.Slice(0, n, 0, keep).(*mat.Dense).Copy(&nq)
	w.Slice(0, n, 0, keep).(*mat.Dense).Copy(&nw)
	for i := 0; i < keep; i++ {
		for j := 0; j < keep; j++ {
			t.Set(i, j, 0)
		}
		t.Set(i, i, theta[i])
	}
}

// EigSymTopKrylov returns the k algebraically largest eigenvalues
// (descending) of the symmetric matrix a and their eigenvectors (p×k) by
// block Krylov iteration on be's kernels. It either meets o.Tol (see
// TruncOptions) or returns an error wrapping ErrNotConverged.
func EigSymTopKrylov(be Backend, a mat.Symmetric, k int, o TruncOptions) (vals []float64, vecs *mat.Dense, info TruncInfo, err error) {
	defer catch("top-k Krylov eigensolver", &err)
	n := a.SymmetricDim()
	if err := checkTopK("top-k eigenpairs", k, n, n); err != nil {
		return nil, nil, info, err
	}
	o, b, err := o.resolve(n, k)
	if err != nil {
		return nil, nil, info, err
	}
	full := symFull(a)
	if !allFinite(full) {
		return nil, nil, info, fmt.Errorf("top-k eigenpairs: %w", ErrNonFinite)
	}
	am := mat.NewDense(n, n, full)
	op := symOperator{n: n, mul: func(dst, x *mat.Dense) { dst.Mul(am, x) }}
	return blockKrylov(be, op, k, o, b, eigCheck(k, n, o.Tol))
}

// SVDTopKrylov returns the k leading singular triplets of a (U m×k,
// descending s, V n×k) by block Krylov iteration on the Gram operator of
// the smaller side, with Rayleigh–Ritz extraction and U = A·V·S⁻¹. It
// either meets o.Tol (Wedin's bound, see TruncOptions) or returns an error
// wrapping ErrNotConverged.
func SVDTopKrylov(be Backend, a mat.Matrix, k int, o TruncOptions) (u *mat.Dense, s []float64, v *mat.Dense, info TruncInfo, err error) {
	defer catch("top-k Krylov SVD", &err)
	m, n := a.Dims()
	if err := checkTopK("top-k SVD", k, m, n); err != nil {
		return nil, nil, nil, info, err
	}
	var ad mat.Matrix
	raw, trans := rawOf(a)
	if !finiteGeneral(raw) {
		return nil, nil, nil, info, fmt.Errorf("top-k SVD: %w", ErrNonFinite)
	}
	ad = &mat.Dense{}
	ad.(*mat.Dense).SetRawMatrix(raw)
	if trans {
		ad = ad.T()
	}
	// Work on the smaller Gram matrix: flip so that rows ≥ cols.
	flip := m < n
	if flip {
		ad = ad.T()
		m, n = n, m
	}
	o, b, err := o.resolve(n, k)
	if err != nil {
		return nil, nil, nil, info, err
	}
	var z mat.Dense
	op := symOperator{n: n, mul: func(dst, x *mat.Dense) {
		_, c := x.Dims()
		z.Reset()
		z.ReuseAs(m, c)
		z.Mul(ad, x)
		dst.Mul(ad.T(), &z)
	}}
	theta, vv, info, err := blockKrylov(be, op, k, o, b, svdCheck(k, n, o.Tol))
	if err != nil {
		return nil, nil, nil, info, err
	}
	s = make([]float64, k)
	uu := mat.NewDense(m, k, nil)
	uu.Mul(ad, vv)
	for j := 0; j < k; j++ {
		s[j] = math.Sqrt(theta[j])
		col := colVec(uu, j)
		blas64.Scal(1/s[j], col)
	}
	if flip {
		return vv, s, uu, info, nil
	}
	return uu, s, vv, info, nil
}
