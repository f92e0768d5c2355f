package kernel

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

func randRows(n, p int, sd float64, seed uint64) *mat.Dense {
	rng := rand.New(rand.NewPCG(seed, 1))
	x := mat.NewDense(n, p, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < p; j++ {
			x.Set(i, j, sd*rng.NormFloat64()+0.5)
		}
	}
	return x
}

// naive is scale·Σ w_i²(x_i−μ)(x_i−μ)ᵀ row by row, and the rows shrunk.
func naive(x *mat.Dense, mu []float64, c, scale float64) (*mat.SymDense, int) {
	n, p := x.Dims()
	out := mat.NewSymDense(p, nil)
	k := 0
	for i := 0; i < n; i++ {
		row := mat.NewVecDense(p, nil)
		for j := 0; j < p; j++ {
			v := x.At(i, j)
			if mu != nil {
				v -= mu[j]
			}
			row.SetVec(j, v)
		}
		if nr := row.Norm(2); c > 0 && nr > c {
			row.ScaleVec(c/nr, row)
			k++
		}
		out.SymRankOne(out, scale, row)
	}
	return out, k
}

// threads is a Threads whose count can be set, recording the settings.
type threads struct {
	n   int
	set []int
}

func (t *threads) Threads() int     { return t.n }
func (t *threads) SetThreads(n int) { t.set = append(t.set, n) }

// The second moment equals the row-by-row definition (to the rounding of
// another summation order) on every path — in place, copied in blocks,
// split into chunks with a single-threaded BLAS or with a settable
// multi-threaded one, whose count is set to one and restored — and counts
// the rows the clip shrank.
func TestSecondMoment(t *testing.T) {
	small := randRows(301, 7, 2, 1)
	big := randRows(4000, 120, 2, 2) // n·p² above the splitting threshold
	mu := func(p int) []float64 {
		m := make([]float64, p)
		for j := range m {
			m[j] = float64(j%3) - 1
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		x       *mat.Dense
		centred bool
		c       float64
		scale   float64
		th      func() *threads
		wantSet []int
	}{
		{"no clip, in place", small, false, 0, 1.0 / 301, nil, nil},
		{"clip", small, false, 4, 1.0 / 301, nil, nil},
		{"centred and clipped, orbit scale", small, true, 4, 1.0 / 16, nil, nil},
		{"clip above every row", small, true, 1e6, 1, nil, nil},
		{"infinite clip", small, false, math.Inf(1), 1, nil, nil},
		{"split, single-threaded BLAS", big, true, 9, 1.0 / 4000, func() *threads { return &threads{n: 1} }, nil},
		{"split, settable BLAS", big, true, 9, 1.0 / 4000, func() *threads { return &threads{n: 3} }, []int{1, 3}},
		{"in place, multi-threaded BLAS", big, false, 0, 1, func() *threads { return &threads{n: 3} }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p := tc.x.Dims()
			var m []float64
			if tc.centred {
				m = mu(p)
			}
			var th Threads
			var rec *threads
			if tc.th != nil {
				rec = tc.th()
				th = rec
			}
			got, nClip, err := SecondMoment(context.Background(), tc.x, m, tc.c, tc.scale, th)
			require.NoError(t, err)
			want, wantClip := naive(tc.x, m, tc.c, tc.scale)
			assert.True(t, mat.EqualApprox(want, got, 1e-10*mat.Norm(want, math.Inf(1))))
			assert.Equal(t, wantClip, nClip)
			if rec != nil {
				assert.Equal(t, tc.wantSet, rec.set)
			}
			again, _, err := SecondMoment(context.Background(), tc.x, m, tc.c, tc.scale, th)
			require.NoError(t, err)
			assert.Equal(t, got.RawSymmetric().Data, again.RawSymmetric().Data, "deterministic")
		})
	}
	_, _, err := SecondMoment(context.Background(), small, []float64{1}, 1, 1, nil)
	assert.ErrorContains(t, err, "mean of length 1")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = SecondMoment(ctx, small, mu(7), 1, 1, nil)
	assert.ErrorIs(t, err, context.Canceled)
}

// Replacing one row moves the clipped second moment by at most
// MomentSensitivity in Frobenius norm; orthogonal rows of norm ≥ c attain it.
func TestMomentSensitivity(t *testing.T) {
	const c, n = 2.0, 50
	x := randRows(n, 5, 3, 2)
	rng := rand.New(rand.NewPCG(3, 4))
	bound := MomentSensitivity(c, 1.0/n)
	var worst float64
	for trial := 0; trial < 200; trial++ {
		y := mat.DenseCopyOf(x)
		i := rng.IntN(n)
		for j := 0; j < 5; j++ {
			y.Set(i, j, 10*rng.NormFloat64())
		}
		if trial == 0 {
			for j := 0; j < 5; j++ {
				x.Set(i, j, 0)
				y.Set(i, j, 0)
			}
			x.Set(i, 0, 5)
			y.Set(i, 1, 5)
		}
		a, _, err := SecondMoment(context.Background(), x, nil, c, 1.0/n, nil)
		require.NoError(t, err)
		b, _, err := SecondMoment(context.Background(), y, nil, c, 1.0/n, nil)
		require.NoError(t, err)
		var d mat.Dense
		d.Sub(a, b)
		worst = math.Max(worst, mat.Norm(&d, 2)/bound)
		if trial == 0 {
			assert.InDelta(t, 1, worst, 1e-12)
		}
	}
	assert.LessOrEqual(t, worst, 1+1e-12)
}

// The clipped sum weighs each row by ClipFactor, and replacing one row
// moves it by at most SumSensitivity.
func TestClippedSum(t *testing.T) {
	x := mat.NewDense(3, 2, []float64{3, 4, 0.3, 0.4, -1, 0})
	s, err := ClippedSum(context.Background(), x, nil, 1)
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{0.6 + 0.3 - 1, 0.8 + 0.4}, s, 1e-15)
	s, err = ClippedSum(context.Background(), x, nil, 0)
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{2.3, 4.4}, s, 1e-15)
	y := mat.DenseCopyOf(x)
	y.SetRow(0, []float64{-30, -40})
	t2, err := ClippedSum(context.Background(), y, nil, 1)
	require.NoError(t, err)
	s, _ = ClippedSum(context.Background(), x, nil, 1)
	assert.InDelta(t, SumSensitivity(1), math.Hypot(s[0]-t2[0], s[1]-t2[1]), 1e-12, "opposite rows of norm ≥ clip attain the bound")
	assert.NoError(t, CheckClippedSum(s, 3, 1))
	assert.ErrorContains(t, CheckClippedSum([]float64{4, 0}, 3, 1), "not clipped")

	// About a centre c: the rows x_i − c, clipped; the same sensitivity.
	c := []float64{1, 1}
	s, err = ClippedSum(context.Background(), x, c, 1)
	require.NoError(t, err)
	d := mat.NewDense(3, 2, []float64{2, 3, -0.7, -0.6, -2, -1})
	want, err := ClippedSum(context.Background(), d, nil, 1)
	require.NoError(t, err)
	assert.InDeltaSlice(t, want, s, 1e-15)
	y.SetRow(0, []float64{-29, -39}) // x_0 − c = (2, 3) replaced by (−30, −40)
	t2, err = ClippedSum(context.Background(), y, c, 1)
	require.NoError(t, err)
	assert.LessOrEqual(t, math.Hypot(s[0]-t2[0], s[1]-t2[1]), SumSensitivity(1)+1e-12)
	_, err = ClippedSum(context.Background(), x, []float64{1}, 1)
	assert.ErrorContains(t, err, "a centre of length 1 for rows of 2 columns")
}

// A non-finite entry is named by every kernel; a row whose norm merely
// overflows is refused by the norm counts and clipped to zero by the
// clipped sum and second moment.
func TestNonFinite(t *testing.T) {
	ctx := context.Background()
	x := randRows(10, 3, 1, 2)
	x.Set(4, 2, math.NaN())
	_, err := NormCounts(ctx, x, nil, []float64{1, 2})
	assert.ErrorContains(t, err, "data row 4, column 2")
	_, err = ClippedSum(ctx, x, nil, 1)
	assert.ErrorContains(t, err, "data row 4, column 2: value NaN is not finite")
	for _, c := range []float64{0, 1} {
		_, _, err = SecondMoment(ctx, x, nil, c, 1, nil)
		assert.ErrorContains(t, err, "data row 4, column 2: value NaN is not finite")
	}
	assert.ErrorContains(t, Finite(x), "row 4, column 2")

	x.Set(4, 2, 1e300)
	_, err = NormCounts(ctx, x, nil, []float64{1, 2})
	assert.ErrorContains(t, err, "overflows")
	s, err := ClippedSum(ctx, x, nil, 1)
	require.NoError(t, err)
	assert.False(t, math.IsNaN(s[2]) || math.IsInf(s[2], 0))
	m, nClip, err := SecondMoment(ctx, x, nil, 1, 1, nil)
	require.NoError(t, err)
	assert.Zero(t, m.At(2, 2)-m.At(2, 2))
	long := 0
	for i := 0; i < 10; i++ {
		if Norm(x.RawRowView(i)) > 1 {
			long++
		}
	}
	assert.Equal(t, long, nClip)
}

func TestGrid(t *testing.T) {
	g, err := Grid(1, 4, 2)
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{1, math.Sqrt2, 2, 2 * math.Sqrt2, 4}, g, 1e-12)
	for _, bad := range [][3]float64{{0, 1, 1}, {2, 1, 1}, {1, math.Inf(1), 1}, {1, 2, 0}} {
		_, err := Grid(bad[0], bad[1], int(bad[2]))
		assert.Error(t, err, "%v", bad)
	}
	d := DefaultGrid()
	assert.Equal(t, GridLow, d[0])
	assert.GreaterOrEqual(t, d[len(d)-1], GridHigh)
}

// Cell puts a score in the first cell whose grid point is at or above it:
// everything at or below the first point (zero, negatives, −∞) in cell 0,
// a score on a grid point in that point's cell, and +∞ and NaN above the
// top (the one NaN rule of every count on a grid).
func TestCell(t *testing.T) {
	grid := []float64{1, 2, 4}
	for _, tc := range []struct {
		s    float64
		want int
	}{
		{math.Inf(-1), 0}, {-4, 0}, {0, 0}, {1, 0}, {1.5, 1}, {2, 1}, {3, 2}, {4, 2},
		{math.Nextafter(4, 5), 3}, {5, 3}, {math.Inf(1), 3}, {math.NaN(), 3},
	} {
		assert.Equal(t, tc.want, Cell(grid, tc.s), "s = %v", tc.s)
	}
}

// The norm counts put a norm on a grid point in that point's cell, count
// the norms above the top in the last cell, and equal Counts of the
// (centred) norms; CheckNormCounts accepts them and refuses counts that
// are not non-negative integers summing to the records.
func TestNormCounts(t *testing.T) {
	x := randRows(400, 5, 3, 1)
	n, p := x.Dims()
	grid := []float64{1, 2, 4, 8, 16}
	x.SetRow(1, []float64{4, 0, 0, 0, 0})
	mu := []float64{0.5, -1, 0, 2, 0.25}
	for _, c := range [][]float64{nil, mu} {
		got, err := NormCounts(context.Background(), x, c, grid)
		require.NoError(t, err)
		norms := make([]float64, n)
		want := make([]float64, len(grid)+1)
		for i := range norms {
			row := mat.NewVecDense(p, mat.Row(nil, i, x))
			if c != nil {
				row.SubVec(row, mat.NewVecDense(p, c))
			}
			norms[i] = row.Norm(2)
			k := 0
			for k < len(grid) && norms[i] > grid[k] {
				k++
			}
			want[k]++
		}
		assert.Equal(t, want, got)
		for k, v := range Counts(norms, grid) {
			assert.EqualValues(t, want[k], v)
		}
		assert.NoError(t, CheckNormCounts(got, int64(n)))
	}
	assert.Equal(t, 2, Cell(grid, 4))
	assert.Equal(t, len(grid), Cell(grid, 17))
	assert.NoError(t, CheckNormCounts([]float64{1, 2}, 3))
	assert.ErrorContains(t, CheckNormCounts([]float64{1, 2}, 4), "one count per record")
	assert.ErrorContains(t, CheckNormCounts([]float64{-1, 5}, 4), "non-negative integer")
	assert.ErrorContains(t, CheckNormCounts([]float64{1.5, 2.5}, 4), "non-negative integer")
}

// CheckMoment accepts a clipped second moment and refuses one that is not
// symmetric, has a negative diagonal entry or a trace above records·clip².
func TestCheckMoment(t *testing.T) {
	x := randRows(50, 3, 2, 3)
	m, _, err := SecondMoment(context.Background(), x, nil, 1, 1, nil)
	require.NoError(t, err)
	full := mat.DenseCopyOf(m).RawMatrix().Data
	require.NoError(t, CheckMoment(3, full, 50, 1))
	for _, tc := range []struct {
		name   string
		break_ func(v []float64)
		want   string
	}{
		{"trace", func(v []float64) { v[0] = 51 }, "not clipped"},
		{"negative diagonal", func(v []float64) { v[4] = -1 }, "negative"},
		{"asymmetric", func(v []float64) { v[1] += 1e-9 }, "symmetric"},
	} {
		v := append([]float64(nil), full...)
		tc.break_(v)
		assert.ErrorContains(t, CheckMoment(3, v, 50, 1), tc.want, tc.name)
	}
}

// Pair differences: each output row is (x_a − x_b)/√2 for one pair of the
// permutation; replacing one input row changes exactly one output row
// (the replace-one property the estimators' sensitivities rest on); a
// common offset leaves every row unchanged; and the second moment of the
// pair rows estimates the centred covariance (here of i.i.d. N(0.5, 4)
// columns: 4·I within the sampling spread 2·4·√(2/m) ≈ 0.36 per diagonal entry).
func TestPairDifferences(t *testing.T) {
	ctx := context.Background()
	x := randRows(4001, 5, 2, 3)
	perm := rand.New(rand.NewPCG(7, 7)).Perm(4001)
	d, err := PairDifferences(ctx, x, perm)
	require.NoError(t, err)
	m, p := d.Dims()
	require.Equal(t, 2000, m)
	require.Equal(t, 5, p)
	for k := 0; k < m; k += 499 {
		for j := 0; j < p; j++ {
			assert.InDelta(t, (x.At(perm[2*k], j)-x.At(perm[2*k+1], j))/math.Sqrt2, d.At(k, j), 1e-12)
		}
	}

	y := mat.DenseCopyOf(x) // neighbour: replace row 17
	for j := 0; j < p; j++ {
		y.Set(17, j, 1e3)
	}
	dy, err := PairDifferences(ctx, y, perm)
	require.NoError(t, err)
	changed := 0
	for k := 0; k < m; k++ {
		if !mat.Equal(d.RowView(k), dy.RowView(k)) {
			changed++
		}
	}
	assert.Equal(t, 1, changed, "one replaced row changes one pair row")

	shifted := mat.DenseCopyOf(x) // a common offset cancels
	for i := 0; i < 4001; i++ {
		for j := 0; j < p; j++ {
			shifted.Set(i, j, x.At(i, j)+250)
		}
	}
	ds, err := PairDifferences(ctx, shifted, perm)
	require.NoError(t, err)
	assert.True(t, mat.EqualApprox(d, ds, 1e-9))

	g, _, err := SecondMoment(ctx, d, nil, 0, 1/float64(m), nil)
	require.NoError(t, err)
	for j := 0; j < p; j++ {
		assert.InDelta(t, 4, g.At(j, j), 0.5)
		for l := j + 1; l < p; l++ {
			assert.InDelta(t, 0, g.At(j, l), 0.4)
		}
	}

	_, err = PairDifferences(ctx, x, perm[:10])
	assert.ErrorContains(t, err, "permutation")
	_, err = PairDifferences(ctx, mat.NewDense(1, 2, nil), []int{0})
	assert.ErrorContains(t, err, "at least 2 rows")
}

// The block norms equal the one-row norms bit for bit, with and without a
// centre, for any number of rows.
func TestSqNorms(t *testing.T) {
	x := randRows(11, 13, 3, 5)
	rows := make([][]float64, 11)
	for i := range rows {
		rows[i] = x.RawRowView(i)
	}
	c := x.RawRowView(10)
	for _, centre := range [][]float64{nil, c} {
		for m := 0; m <= len(rows); m++ {
			got := make([]float64, m)
			if centre == nil {
				sqNorms(got, rows[:m], make([]float64, 13))
			} else {
				sqNorms(got, rows[:m], centre)
			}
			for k := range got {
				assert.Equal(t, math.Float64bits(sqNorm(rows[k], centre)), math.Float64bits(got[k]), "row %d of %d", k, m)
			}
		}
	}
}

// Above the splitting threshold the norm counts and the clipped sum are
// computed in row chunks on several goroutines: the counts equal the
// one-row-at-a-time counts, the sum equals the row-by-row sum to the
// rounding of another summation order, and neither depends on the number
// of threads (GOMAXPROCS 1 and 2 give the same bits).
func TestChunkedPasses(t *testing.T) {
	x := randRows(9000, 120, 2, 7) // n·p above parallelEntries
	require.Greater(t, rowsFrom(x).chunks(), 1)
	n, p := x.Dims()
	grid := []float64{20, 21, 22, 23, 24}
	const clip = 21.5
	wantSum := make([]float64, p)
	norms := make([]float64, n)
	for i := range n {
		row := x.RawRowView(i)
		norms[i] = Norm(row)
		f := ClipFactor(row, clip)
		for j, v := range row {
			wantSum[j] += f * v
		}
	}
	var first [][]float64
	for _, procs := range []int{1, 2} {
		prev := runtime.GOMAXPROCS(procs)
		counts, err := NormCounts(context.Background(), x, nil, grid)
		require.NoError(t, err)
		sum, err := ClippedSum(context.Background(), x, nil, clip)
		require.NoError(t, err)
		runtime.GOMAXPROCS(prev)
		for k, c := range Counts(norms, grid) {
			assert.EqualValues(t, c, counts[k])
		}
		assert.InDeltaSlice(t, wantSum, sum, 1e-9*Norm(wantSum))
		if first == nil {
			first = [][]float64{counts, sum}
		} else {
			assert.Equal(t, first, [][]float64{counts, sum}, "independent of the number of threads")
		}
	}
}

// Squared norms computed once (SqNorms, equal to the one-row norms bit for
// bit) and handed to the kernels about the same centre give the results
// of the kernels that compute them, bit for bit, in one chunk and in
// several; a slice of the wrong length is refused.
func TestGivenSqNorms(t *testing.T) {
	ctx := context.Background()
	for _, x := range []*mat.Dense{randRows(301, 7, 2, 3), randRows(9000, 120, 2, 4)} {
		n, p := x.Dims()
		mu := make([]float64, p)
		for j := range mu {
			mu[j] = 0.5 - 0.01*float64(j)
		}
		grid := DefaultGrid()
		for _, c := range [][]float64{nil, mu} {
			sq, err := SqNorms(ctx, x, c)
			require.NoError(t, err)
			require.Len(t, sq, n)
			for i, v := range sq {
				require.Equal(t, math.Float64bits(sqNorm(x.RawRowView(i), c)), math.Float64bits(v), "row %d", i)
			}
			clip := math.Sqrt(sq[n/2])
			want, err := NormCounts(ctx, x, c, grid)
			require.NoError(t, err)
			got, err := NormCounts(ctx, x, c, grid, sq...)
			require.NoError(t, err)
			assert.Equal(t, want, got)
			want, err = ClippedSum(ctx, x, c, clip)
			require.NoError(t, err)
			got, err = ClippedSum(ctx, x, c, clip, sq...)
			require.NoError(t, err)
			assert.Equal(t, want, got)
			wm, wk, err := SecondMoment(ctx, x, c, clip, 1, nil)
			require.NoError(t, err)
			gm, gk, err := SecondMoment(ctx, x, c, clip, 1, nil, sq...)
			require.NoError(t, err)
			assert.Equal(t, wm, gm)
			assert.Equal(t, wk, gk)
			assert.Positive(t, gk)
		}
		_, err := NormCounts(ctx, x, nil, grid, 1)
		assert.ErrorContains(t, err, "1 squared norms")
		_, err = ClippedSum(ctx, x, nil, 1, 1)
		assert.ErrorContains(t, err, "1 squared norms")
		_, _, err = SecondMoment(ctx, x, nil, 1, 1, nil, 1)
		assert.ErrorContains(t, err, "1 squared norms")
	}
}
