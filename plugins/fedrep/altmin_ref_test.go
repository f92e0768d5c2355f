package fedrep

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/kernel"
)

// The Kronecker-block statistics as they were before the fused kernel
// (level-1 axpys into k(k+1)/2 dense d×d blocks per chunk): the oracle the
// fused kernel is tested against, and the baseline of its benchmark.

// refAltminScratch is one worker's scratch for the U-step statistics.
type refAltminScratch struct{ h, hb, xh, vh []float64 }

// refAltminAcc is one chunk's partial sums: the k(k+1)/2 blocks (a ≤ b) of
// d×d upper triangles of Σ H_j v̂_a v̂_b, and the d·k vector b.
type refAltminAcc struct{ c, b []float64 }

// refAltminStats accumulates, over the listed users, the U-step statistics
// A = Σ_j Σ_i W_ij W_ijᵀ (dk×dk, vec row-major: index p·k + a) and
// b = Σ_j Σ_i clip(y_ij, c_y) W_ij with W_ij = clip₂(vec(x_ij v_jᵀ), c_W),
// v_j being user j's least-squares head for U on its training half. It uses
// the Kronecker form A_j = H_j ⊗ v̂_j v̂_jᵀ (DERIVATIONS.md §5). At most
// portion rows per user are used. Users whose head is zero or not finite
// contribute nothing.
func refAltminStats(ctx context.Context, eng *fedrepEngine, u []float64, users []int32, cw, cy float64, portion int) (*mat.SymDense, []float64, error) {
	d, k := eng.d, eng.k
	npair := k * (k + 1) / 2
	chunks := max(1, min(len(users), 32, int(8e6/float64(npair*d*d+1))))
	ws := make([]refAltminScratch, workers(chunks))
	for w := range ws {
		ws[w] = refAltminScratch{h: make([]float64, d*d), hb: make([]float64, d), xh: make([]float64, d), vh: make([]float64, k)}
	}
	parts := make([]refAltminAcc, chunks)
	err := parallelChunks(ctx, chunks, func(w, c int) {
		if parts[c].c == nil {
			parts[c] = refAltminAcc{c: make([]float64, npair*d*d), b: make([]float64, d*k)}
		}
		lo, hi := chunkBounds(len(users), chunks, c)
		for _, ui := range users[lo:hi] {
			refAltminUser(eng, eng.ws[w], u, int(ui), cw, cy, portion, &ws[w], &parts[c])
		}
	})
	if err != nil {
		return nil, nil, err
	}
	cs := make([]float64, npair*d*d)
	bs := make([]float64, d*k)
	for _, p := range parts {
		if p.c == nil {
			continue
		}
		for i, v := range p.c {
			cs[i] += v
		}
		for i, v := range p.b {
			bs[i] += v
		}
	}
	return refKroneckerToA(cs, d, k), bs, nil
}

// refAltminUser adds user ui's H_j ⊗ v̂_j v̂_jᵀ blocks and b_j to acc.
func refAltminUser(eng *fedrepEngine, fws *workerScratch, u []float64, ui int, cw, cy float64, portion int, s *refAltminScratch, acc *refAltminAcc) {
	d, k := eng.d, eng.k
	ur := eng.lay.users[ui]
	// The head: least squares on the whole training half for U.
	vRows, _ := eng.batches(fws, ui, 0)
	v := eng.localFit(fws, u, vRows, lossSquared)
	nv := kernel.SafeNorm(v)
	if nv == 0 || math.IsInf(nv, 0) || math.IsNaN(nv) {
		return
	}
	for a := range s.vh {
		s.vh[a] = v[a] / nv
	}
	for p := 0; p < d; p++ {
		row := s.h[p*d+p : p*d+d]
		for q := range row {
			row[q] = 0
		}
		s.hb[p] = 0
	}
	used := min(portion, ur.t1-ur.t0)
	for r := ur.t0; r < ur.t0+used; r++ {
		xr := eng.row(int32(r))
		nx := kernel.SafeNorm(xr)
		if nx == 0 || math.IsInf(nx, 0) {
			continue
		}
		t := math.Min(nx*nv, cw) // ‖W‖ after clipping
		yt := math.Max(-cy, math.Min(cy, eng.y[r]))
		for p := range s.xh {
			s.xh[p] = xr[p] / nx
		}
		t2 := t * t
		for p := 0; p < d; p++ {
			xp := t2 * s.xh[p]
			if xp == 0 {
				continue
			}
			axpy(xp, s.xh[p:d], s.h[p*d+p:p*d+d])
			s.hb[p] += yt * t * s.xh[p]
		}
	}
	pi := 0
	for a := 0; a < k; a++ {
		for b := a; b < k; b++ {
			f := s.vh[a] * s.vh[b]
			blk := acc.c[pi*d*d : (pi+1)*d*d]
			for p := 0; p < d; p++ {
				axpy(f, s.h[p*d+p:p*d+d], blk[p*d+p:p*d+d])
			}
			pi++
		}
	}
	for p := 0; p < d; p++ {
		for a := 0; a < k; a++ {
			acc.b[p*k+a] += s.hb[p] * s.vh[a]
		}
	}
}

// refKroneckerToA assembles the dk×dk symmetric A from the k(k+1)/2 blocks
// Σ_j v̂_a v̂_b H_j (upper triangles), entry (p·k + a, q·k + b).
func refKroneckerToA(cs []float64, d, k int) *mat.SymDense {
	pairIdx := func(a, b int) int { // index of (min, max) among a ≤ b pairs
		if a > b {
			a, b = b, a
		}
		return a*k - a*(a-1)/2 + (b - a)
	}
	dk := d * k
	am := mat.NewSymDense(dk, nil)
	raw := am.RawSymmetric()
	for p := 0; p < d; p++ {
		for a := 0; a < k; a++ {
			i := p*k + a
			for q := p; q < d; q++ {
				for b := 0; b < k; b++ {
					j := q*k + b
					if j < i {
						continue
					}
					raw.Data[i*raw.Stride+j] = cs[pairIdx(a, b)*d*d+p*d+q]
				}
			}
		}
	}
	return am
}

// axpy sets y += alpha·x (equal lengths) through the vectorised BLAS level-1
// kernel.
func axpy(alpha float64, x, y []float64) {
	blas64.Axpy(alpha, blas64.Vector{N: len(x), Inc: 1, Data: x}, blas64.Vector{N: len(y), Inc: 1, Data: y})
}

// TestFusedStatsMatchReference checks the fused kernel against the
// level-1 reference on pixel-like data (zero rows and columns, clipped and
// unclipped rows) for ranks 1–4 (the unrolled pair counts 1, 3, 6 and the
// generic loop), to 1e-12 relative.
func TestFusedStatsMatchReference(t *testing.T) {
	ds := pixelUsers(40, 6, 23, 3)
	lay, err := newLayout(ds, 0, 0)
	require.NoError(t, err)
	users := make([]int32, 40)
	for i := range users {
		users[i] = int32(i)
	}
	for _, tc := range []struct {
		k      int
		cw, cy float64
	}{{1, 1e9, 1e9}, {2, 0.5, 1}, {3, 2, 0.5}, {4, 1e9, 1e9}} {
		eng := newFedrepEngine(ds.X, ds.Y, lay, tc.k, math.Inf(1), lossSquared)
		u := mat.NewDense(23, tc.k, nil)
		for i := range u.RawMatrix().Data {
			u.RawMatrix().Data[i] = math.Sin(float64(3*i + 1))
		}
		a1, b1, err := altminStats(context.Background(), eng, u.RawMatrix().Data, users, tc.cw, tc.cy, 5)
		require.NoError(t, err)
		a2, b2, err := refAltminStats(context.Background(), eng, u.RawMatrix().Data, users, tc.cw, tc.cy, 5)
		require.NoError(t, err)
		scale := mat.Norm(a2, math.Inf(1))
		var diff mat.Dense
		diff.Sub(a1, a2)
		assert.LessOrEqual(t, mat.Norm(&diff, math.Inf(1)), 1e-12*scale, "A, k = %d", tc.k)
		assert.InDeltaSlice(t, b2, b1, 1e-12*kernel.SafeNorm(b2), "b, k = %d", tc.k)
	}
}

// BenchmarkAltMinStatsPixelsReference is BenchmarkAltMinStatsPixels on the
// level-1 reference kernel (the kernel before this one).
func BenchmarkAltMinStatsPixelsReference(b *testing.B) { benchAltMinStats(b, refAltminStats) }
