package kernel

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// The rows kernels: the counts of the (centred) row norms on a public
// grid, the clipped sum and the clipped (centred) second moment of rows
// x_i ∈ ℝᵖ, with their sensitivities under replacing one row and the
// checks a host applies to results that claim to come from them.

// The default public grid of the norm counts: norms from 1e-6 to 1e6, 16
// points per octave (steps of 4.4 %).
const (
	GridLow       = 1e-6
	GridHigh      = 1e6
	GridPerOctave = 16
)

// CheckSlack is the relative slack of the result checks on clipped
// aggregates (their sums and traces are computed in floating point).
const CheckSlack = 1 + 1e-9

// Grid returns the geometric grid lo·2^(k/perOctave), k = 0, 1, …, up to
// and including the first point ≥ hi.
func Grid(lo, hi float64, perOctave int) ([]float64, error) {
	if !(lo > 0) || !(hi > lo) || math.IsInf(hi, 0) || perOctave < 1 {
		return nil, fmt.Errorf("quantile grid: need 0 < lo < hi < ∞ and perOctave ≥ 1, got lo=%v hi=%v perOctave=%d", lo, hi, perOctave)
	}
	steps := int(math.Ceil(math.Log2(hi/lo) * float64(perOctave)))
	g := make([]float64, steps+1)
	for k := range g {
		g[k] = lo * math.Exp2(float64(k)/float64(perOctave))
	}
	return g, nil
}

// DefaultGrid is Grid(GridLow, GridHigh, GridPerOctave).
func DefaultGrid() []float64 {
	g, _ := Grid(GridLow, GridHigh, GridPerOctave) // valid constants
	return g
}

// Cell returns the grid cell of score s: the first k with s ≤ g_k, or
// len(grid) when s lies above the grid's top. The cells are (g_{k−1}, g_k]
// with g_{−1} = −∞. Every score has one cell: a NaN falls above the top,
// though no caller sees one (dataio refuses non-finite data, and the norm
// kernels turn a NaN norm into 0 or a refusal).
func Cell(grid []float64, s float64) int { return sort.SearchFloat64s(grid, s) }

// Counts returns the number of scores in each cell of the grid (Cell):
// len(grid)+1 counts, the last one those above the grid's top. Replacing
// one score moves one unit between two cells.
func Counts(scores, grid []float64) []int64 {
	c := make([]int64, len(grid)+1)
	for _, s := range scores {
		c[Cell(grid, s)]++
	}
	return c
}

// RowReader is a matrix of finite values whose rows are decoded into a
// buffer its reader reuses rather than held as float64 (data.Bytes).
type RowReader interface {
	Dims() (r, c int)
	// Row writes row i into dst (of length at least c) and returns it.
	Row(i int, dst []float64) []float64
}

// ByteRows is a RowReader that also writes row i less a centre in one
// sweep (data.Bytes), with the bits of Row then the subtraction: the
// second moment decodes and centres such rows that way.
type ByteRows interface {
	RowLess(i int, dst, mu []float64) []float64
}

// Matrix is what the rows kernels read: a *mat.Dense or a RowReader.
type Matrix interface {
	Dims() (r, c int)
}

// rowsOf is x read row by row: from a *mat.Dense's storage, or decoded.
type rowsOf struct {
	d    *mat.Dense
	r    RowReader
	b    ByteRows // r, when it also decodes less a centre in one sweep
	n, p int
}

// rowsFrom returns how the rows of x are read.
func rowsFrom(x Matrix) rowsOf {
	n, p := x.Dims()
	d, _ := x.(*mat.Dense)
	r, _ := x.(RowReader)
	b, _ := x.(ByteRows)
	return rowsOf{d: d, r: r, b: b, n: n, p: p}
}

// row returns row i: a view of the storage, or buf (of length p) filled.
func (x rowsOf) row(i int, buf []float64) []float64 {
	if x.d != nil {
		return x.d.RawRowView(i)
	}
	return x.r.Row(i, buf)
}

// centred writes row i less mu (nil: 0) into dst (of length p) and
// returns it: the same bits as row i, then the subtraction.
func (x rowsOf) centred(i int, dst, mu []float64) []float64 {
	switch {
	case mu == nil:
		copy(dst, x.row(i, dst))
	case x.b != nil:
		return x.b.RowLess(i, dst, mu)
	default:
		for j, v := range x.row(i, dst) {
			dst[j] = v - mu[j]
		}
	}
	return dst
}

// finiteRow names the first non-finite entry of row i, if any (a
// RowReader's rows are finite).
func (x rowsOf) finiteRow(i int, row []float64) error {
	if x.d == nil {
		return nil
	}
	return FiniteRow(i, row)
}

// check reports a Matrix that is neither a *mat.Dense nor a RowReader,
// and squared norms (sq, when not nil) that are not one per row.
func (x rowsOf) check(what string, sq []float64) error {
	switch {
	case x.d == nil && x.r == nil:
		return fmt.Errorf("%s: rows of an unknown matrix type", what)
	case sq != nil && len(sq) != x.n:
		return fmt.Errorf("%s: %d squared norms for %d rows", what, len(sq), x.n)
	}
	return nil
}

// SqNorms returns the squared norms ‖x_i − center‖² of m's rows (center
// nil: 0), each summed in column order: what NormCounts, ClippedSum and
// SecondMoment about the same centre compute, bit for bit, and accept
// when given them.
func SqNorms(ctx context.Context, m Matrix, center []float64) ([]float64, error) {
	x := rowsFrom(m)
	if err := x.check("squared norms", nil); err != nil {
		return nil, err
	}
	out := make([]float64, x.n)
	_, err := x.sumBlocks(ctx, "squared norms", 0, center, nil, func(_ []float64, i int, _ [][]float64, sq []float64) error {
		copy(out[i:], sq)
		return nil
	})
	return out, err
}

// NormCounts returns the counts of the norms ‖x_i − center‖ (center nil:
// 0) in the cells of the increasing grid, as Counts (as floats, the
// counts a pass result carries). It fails on a row whose norm is not
// finite. sq, when given, holds the rows' squared norms about center
// (SqNorms), which are then not computed again.
func NormCounts(ctx context.Context, m Matrix, center, grid []float64, sq ...float64) ([]float64, error) {
	x := rowsFrom(m)
	err := x.check("norm counts", sq)
	if err == nil && sq == nil {
		sq, err = SqNorms(ctx, m, center)
	}
	if err != nil {
		return nil, err
	}
	counts := make([]float64, len(grid)+1)
	for i, v := range sq {
		s := math.Sqrt(v)
		if math.IsNaN(s) || math.IsInf(s, 0) {
			if err := FiniteRow(i, x.row(i, make([]float64, x.p))); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("data row %d: its norm overflows float64 (entries near 1e154 or larger)", i)
		}
		counts[Cell(grid, s)]++
	}
	return counts, nil
}

// CheckNormCounts checks counts claiming to be the norm counts on a grid of
// records rows or users (NormCounts, a users histogram): non-negative
// integers summing to records, one count per record.
func CheckNormCounts(counts []float64, records int64) error {
	var total float64
	for k, c := range counts {
		if c < 0 || c != math.Trunc(c) {
			return fmt.Errorf("count %d = %v is not a non-negative integer", k, c)
		}
		total += c
	}
	if total != float64(records) {
		return fmt.Errorf("the counts sum to %v, not to the %d records (one count per record)", total, records)
	}
	return nil
}

// ClippedSum returns Σ_i min(1, clip/‖x_i − center‖)·(x_i − center)
// (ClipFactor; center nil: zeros; clip ≤ 0 or +Inf: the plain sum of the
// centred rows). It fails on a non-finite entry; a row whose norm merely
// overflows gets weight zero. sq, when given, holds the rows' squared norms
// about center (SqNorms), which are then not computed again.
func ClippedSum(ctx context.Context, m Matrix, center []float64, clip float64, sq ...float64) ([]float64, error) {
	x := rowsFrom(m)
	if err := x.check("clipped sum", sq); err != nil {
		return nil, err
	}
	// acc holds Σ f_i·x_i and, last, Σ f_i: Σ f_i·(x_i − c) is the
	// first less the second times c.
	acc, err := x.sumBlocks(ctx, "clipped sum", x.p+1, center, sq, func(acc []float64, i int, rows [][]float64, sq []float64) error {
		sum := acc[:x.p]
		for k, row := range rows {
			if math.IsNaN(sq[k]) || math.IsInf(sq[k], 0) { // a non-finite entry, or a norm that overflows (weight 0)
				if err := x.finiteRow(i+k, row); err != nil {
					return err
				}
			}
			f := clipFactor(sq[k], clip)
			floats.AddScaled(sum, f, row)
			acc[x.p] += f
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sum := acc[:x.p:x.p]
	if center != nil {
		floats.AddScaled(sum, -acc[x.p], center)
	}
	return sum, nil
}

// SumSensitivity is the replace-one ℓ2 sensitivity 2·clip of ClippedSum.
func SumSensitivity(clip float64) float64 { return 2 * clip }

// CheckClippedSum checks a sum claiming to be ClippedSum of records rows
// at clip (> 0): its norm is at most records·clip.
func CheckClippedSum(sum []float64, records int64, clip float64) error {
	if clip > 0 && Norm(sum) > float64(records)*clip*CheckSlack {
		return fmt.Errorf("the sum's norm exceeds records·clip: the rows were not clipped to %g", clip)
	}
	return nil
}

// Tuning of the rows kernels.
const (
	// blockFloats bounds the copy buffer of each running chunk (floats).
	blockFloats = 1 << 20
	// chunks is the fixed number of row chunks a large pass is split
	// into, computed concurrently and added in order, so that the result
	// does not depend on the number of threads.
	chunks = 4
	// parallelWork is the n·p² below which splitting a second moment is
	// not worth it.
	parallelWork = 5e7
	// parallelEntries is the n·p below which splitting a pass that reads
	// each entry a few times (norms, sums) is not worth it.
	parallelEntries = 1 << 20
)

// chunks is the number of row chunks of a pass over x that reads each
// entry a few times: chunks when it is large, else 1.
func (x rowsOf) chunks() int {
	if float64(x.n)*float64(x.p) >= parallelEntries && x.n >= 4*chunks {
		return chunks
	}
	return 1
}

// rowBlock is the number of rows sumBlocks reads at a time.
const rowBlock = 64

// rowGroup is the number of rows SecondMoment centres, measures and
// shrinks at a time (sqNorms' four), before they leave the cache.
const rowGroup = 4

// sumBlocks returns the sum over x's rows of what f adds to an accumulator
// of length size: the rows split in chunks on several goroutines
// (inChunks), each read rowBlock rows at a time (views of a *mat.Dense's
// storage, or decoded) with their squared norms about c (nil: 0; sqNorms,
// or known's when it is not nil) and handed to f with the index of the
// first and the chunk's accumulator; the chunks' accumulators are added in
// chunk order.
func (x rowsOf) sumBlocks(ctx context.Context, what string, size int, c, known []float64, f func(acc []float64, i int, rows [][]float64, sq []float64) error) ([]float64, error) {
	if c == nil {
		c = make([]float64, x.p) // v − 0 = v: the rows' own squared norms
	} else if len(c) != x.p {
		return nil, fmt.Errorf("%s: a centre of length %d for rows of %d columns", what, len(c), x.p)
	}
	parts, err := inChunks(ctx, what, x.chunks(), x.n, func(a, b int) ([]float64, error) {
		acc, buf := make([]float64, size), make([]float64, rowBlock*x.p)
		rows, sq := make([][]float64, rowBlock), make([]float64, rowBlock)
		for i := a; i < b; i += rowBlock {
			if (i-a)%4096 == 0 && ctx.Err() != nil {
				return nil, fmt.Errorf("%s: %w", what, ctx.Err())
			}
			m := min(rowBlock, b-i)
			for k := range m {
				rows[k] = x.row(i+k, buf[k*x.p:(k+1)*x.p])
			}
			s := sq[:m]
			if known != nil {
				s = known[i : i+m]
			} else {
				sqNorms(s, rows[:m], c)
			}
			if err := f(acc, i, rows[:m], s); err != nil {
				return nil, err
			}
		}
		return acc, nil
	})
	if err != nil {
		return nil, err
	}
	for _, v := range parts[1:] {
		floats.Add(parts[0], v)
	}
	return parts[0], nil
}

// inChunks splits the rows 0…n−1 into nc contiguous chunks, runs
// f(a, b) on each chunk [a, b) concurrently (ParallelChunks) and returns
// the chunks' results in row order, or the error of the first chunk that
// failed (the first bad row, since each chunk stops at its own), or the
// context's error wrapped in what.
func inChunks[T any](ctx context.Context, what string, nc, n int, f func(a, b int) (T, error)) ([]T, error) {
	out := make([]T, nc)
	errs := make([]error, nc)
	cerr := ParallelChunks(ctx, nc, func(_, k int) { out[k], errs[k] = f(k*n/nc, (k+1)*n/nc) })
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if cerr != nil {
		return nil, fmt.Errorf("%s: %w", what, cerr)
	}
	return out, nil
}

// Workers is the number of goroutines ParallelChunks runs for chunks of
// work: min(GOMAXPROCS, chunks), at least one.
func Workers(chunks int) int { return max(1, min(runtime.GOMAXPROCS(0), chunks)) }

// ParallelChunks runs fn(worker, chunk) for every chunk on a fixed pool of
// Workers(chunks) goroutines; worker indexes per-goroutine scratch. It
// stops early and returns ctx.Err() when the context is cancelled.
func ParallelChunks(ctx context.Context, chunks int, fn func(worker, chunk int)) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < Workers(chunks); w++ {
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

// Threads is the BLAS thread count SecondMoment may use (a backend);
// when it also has SetThreads(int), SecondMoment may set it to one while
// it runs its own goroutines.
type Threads interface{ Threads() int }

// threadSetter is a Threads whose count can be changed (OpenBLAS).
type threadSetter interface{ SetThreads(n int) }

// setMu serialises the products that change the BLAS thread count.
var setMu sync.Mutex

// SecondMoment returns scale·Σ_i w_i²(x_i−μ)(x_i−μ)ᵀ with
// w_i = min(1, c/‖x_i−μ‖) (c ≤ 0 or +Inf: no clipping; mu nil: μ = 0) and
// the number of rows the clip shrank by more than rounding (CountSlack).
//
// When no row is centred or clipped and x is a *mat.Dense, the product is
// a BLAS syrk on x's own storage; otherwise rows are copied (or decoded,
// from a RowReader), centred and shrunk in blocks of bounded size, each
// folded in by a rank-k update. A large product is split into a fixed
// number of row chunks computed concurrently (ParallelChunks): with a
// single-threaded BLAS (th nil or th.Threads() ≤ 1), or when rows are
// copied and th can set its thread count — the BLAS then runs one thread
// per chunk while the product runs, so that every core copies and
// multiplies on its own instead of waiting for the BLAS's threads at each
// block. The chunks are summed in a fixed order. A non-finite result is
// traced to its entry in x. x is never written. sq, when given, holds the
// rows' squared norms about mu (SqNorms), which the clip then reads
// instead of computing them again.
func SecondMoment(ctx context.Context, m Matrix, mu []float64, c, scale float64, th Threads, sq ...float64) (*mat.SymDense, int, error) {
	x := rowsFrom(m)
	if err := x.check("second moment", sq); err != nil {
		return nil, 0, err
	}
	n, p := x.n, x.p
	if mu != nil && len(mu) != p {
		return nil, 0, fmt.Errorf("second moment: mean of length %d for %d columns", len(mu), p)
	}
	doClip := c > 0 && !math.IsInf(c, 1)
	needCopy := x.d == nil || mu != nil || (doClip && anyLonger(x, c, sq))
	threads := 1
	if th != nil {
		threads = th.Threads()
	}
	set, settable := th.(threadSetter)
	nc := 1
	if float64(n)*float64(p)*float64(p) >= parallelWork && n >= 4*chunks {
		switch {
		case threads <= 1:
			nc = chunks
		case needCopy && settable:
			nc = chunks
			setMu.Lock()
			set.SetThreads(1)
			defer func() { set.SetThreads(threads); setMu.Unlock() }()
		}
	}
	bs := max(1, blockFloats/p)
	type part struct {
		g        *mat.SymDense
		nClipped int
	}
	parts, err := inChunks(ctx, "second moment", nc, n, func(a, b int) (part, error) {
		pt := part{g: newMoment(p)}
		if !needCopy {
			if b > a {
				raw := x.d.RawMatrix()
				Fold(pt.g.RawSymmetric().Data, p, blas64.General{Rows: b - a, Cols: p, Stride: raw.Stride, Data: raw.Data[a*raw.Stride:]}, scale)
			}
			return pt, nil
		}
		k := min(bs, max(b-a, 1))
		buf, rows, norms, zero := make([]float64, k*p), make([][]float64, rowGroup), make([]float64, rowGroup), make([]float64, p)
		for start := a; start < b; start += bs {
			if err := ctx.Err(); err != nil {
				return pt, fmt.Errorf("second moment: %w", err)
			}
			m := min(bs, b-start)
			for i := 0; i < m; i += rowGroup {
				// A few rows at a time, shrunk while they are in cache.
				g := rows[:min(rowGroup, m-i)]
				for k := range g {
					g[k] = x.centred(start+i+k, buf[(i+k)*p:(i+k+1)*p], mu)
				}
				if !doClip {
					continue
				}
				s := norms[:len(g)]
				if sq != nil {
					s = sq[start+i : start+i+len(g)]
				} else {
					sqNorms(s, g, zero)
				}
				for k, row := range g {
					if shrink(row, s[k], c) {
						pt.nClipped++
					}
				}
			}
			Fold(pt.g.RawSymmetric().Data, p, blas64.General{Rows: m, Cols: p, Stride: p, Data: buf[:m*p]}, scale)
		}
		return pt, nil
	})
	if err != nil {
		return nil, 0, err
	}
	out := parts[0].g
	nClipped := 0
	for k, pt := range parts {
		nClipped += pt.nClipped
		if k > 0 {
			out.AddSym(out, pt.g)
		}
	}
	if err := finiteMoment(out, x); err != nil {
		return nil, 0, err
	}
	return out, nClipped, nil
}

// newMoment returns a p×p zero matrix for a moment to be folded into,
// its memory already written. A large fresh allocation is memory the
// process has not touched: Fold (syrk with beta = 1) reads each page
// before writing it, which maps the kernel's shared zero page and then
// copies it on the write, with a TLB shootdown to every CPU the process
// runs on. Writing the zeros first faults each page in once, private.
// On the warm Fashion-MNIST fit the shootdowns were about 5 % of the
// plugin's CPU (bench/results/dataio.md §14).
func newMoment(p int) *mat.SymDense {
	g := mat.NewSymDense(p, nil)
	clear(g.RawSymmetric().Data)
	return g
}

// Fold adds alpha·RᵀR to the upper triangle of the p×p row-major matrix
// upper, for the rows R (a rank-k update, BLAS syrk): the step every
// implementation of the second moment folds its clipped rows in with.
func Fold(upper []float64, p int, rows blas64.General, alpha float64) {
	blas64.Syrk(blas.Trans, alpha, rows, 1, blas64.Symmetric{Uplo: blas.Upper, N: p, Stride: p, Data: upper})
}

// anyLonger reports whether some row of x has norm above c (from the
// rows' squared norms sq when not nil).
func anyLonger(x rowsOf, c float64, sq []float64) bool {
	buf := make([]float64, x.p)
	for i := 0; i < x.n; i++ {
		if sq == nil && sqNorm(x.row(i, buf), nil) > c*c || sq != nil && sq[i] > c*c {
			return true
		}
	}
	return false
}

// finiteMoment checks that the second moment g is finite; a non-finite
// entry means the data hold a NaN or Inf (or overflow) in that column,
// which is then located in x.
func finiteMoment(g *mat.SymDense, x rowsOf) error {
	p := g.SymmetricDim()
	for j := 0; j < p; j++ {
		for k := j; k < p; k++ {
			if v := g.At(j, k); math.IsNaN(v) || math.IsInf(v, 0) {
				if err := x.finite(); err != nil {
					return err
				}
				return fmt.Errorf("second moment of columns %d and %d overflows (%v): rescale the data", j, k, v)
			}
		}
	}
	return nil
}

// MomentSensitivity is the replace-one Frobenius sensitivity √2·c²·scale
// of SecondMoment: ‖xxᵀ − yyᵀ‖_F² = ‖x‖⁴ + ‖y‖⁴ − 2(xᵀy)² ≤ 2c⁴ for rows
// of norm ≤ c, with equality for orthogonal rows of norm c.
func MomentSensitivity(c, scale float64) float64 {
	return math.Sqrt2 * c * c * scale
}

// CheckMoment checks a p×p row-major matrix claiming to be SecondMoment
// (scale 1) of records rows at clip (0: none): exactly symmetric, with a
// non-negative diagonal and, when clipped, a trace of at most
// records·clip².
func CheckMoment(p int, mom []float64, records int64, clip float64) error {
	var trace float64
	for a := 0; a < p; a++ {
		for b := a + 1; b < p; b++ {
			if mom[a*p+b] != mom[b*p+a] {
				return fmt.Errorf("the second moment is not symmetric")
			}
		}
		d := mom[a*p+a]
		if d < 0 {
			return fmt.Errorf("second-moment diagonal entry %d is negative (a sum of squares cannot be)", a)
		}
		trace += d
	}
	if clip > 0 && trace > float64(records)*clip*clip*CheckSlack {
		return fmt.Errorf("the second moment's trace exceeds records·clip²: the rows were not clipped to %g", clip)
	}
	return nil
}

// Finite names the first non-finite entry of x, if any.
func Finite(x *mat.Dense) error { return rowsFrom(x).finite() }

// finite names the first non-finite entry of x, if any.
func (x rowsOf) finite() error {
	buf := make([]float64, x.p)
	for i := 0; i < x.n; i++ {
		if err := x.finiteRow(i, x.row(i, buf)); err != nil {
			return err
		}
	}
	return nil
}

// FiniteRow names the first non-finite entry of row i, if any.
func FiniteRow(i int, row []float64) error {
	for j, v := range row {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("data row %d, column %d: value %v is not finite", i, j, v)
		}
	}
	return nil
}

// PairDifferences returns the ⌊n/2⌋×p matrix whose row k is
// (x_a − x_b)/√2 for the pair (a, b) = (perm[2k], perm[2k+1]) of x's rows:
// every row is in at most one pair, so replacing one row of x changes at
// most one row of the result. The rows are free of any common offset
// (translation invariant), and for independent rows of covariance Σ each
// has covariance Σ (E[(x_a−x_b)(x_a−x_b)ᵀ]/2 = Σ). perm must be a
// permutation of 0…n−1 drawn independently of the data.
func PairDifferences(ctx context.Context, x *mat.Dense, perm []int) (*mat.Dense, error) {
	n, p := x.Dims()
	if len(perm) != n {
		return nil, fmt.Errorf("pair differences: permutation of %d for %d rows", len(perm), n)
	}
	m := n / 2
	if m < 1 {
		return nil, fmt.Errorf("pair differences: need at least 2 rows, have %d", n)
	}
	out := mat.NewDense(m, p, nil)
	for k := 0; k < m; k++ {
		if k%8192 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("pair differences: %w", err)
			}
		}
		a, b := x.RawRowView(perm[2*k]), x.RawRowView(perm[2*k+1])
		dst := out.RawRowView(k)
		for j := range dst {
			dst[j] = (a[j] - b[j]) / math.Sqrt2
		}
	}
	return out, nil
}
