package fedrep

import (
	"context"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/kernel"
)

// The U-step statistics of Priv-AltMin (DERIVATIONS.md §5) through the
// Kronecker form A = Σ_j H_j ⊗ v̂_j v̂_jᵀ, H_j = Σ_r g_r g_rᵀ (g_r = the
// clipped, scaled row r of user j). The k(k+1)/2 pair sums Σ_j v̂_a v̂_b H_j
// are stored packed (upper triangle of d×d, a tile of rows as a
// k(k+1)/2 × n_t block); each user forms the tile's rows of H_j by
// matrix–vector products over its few rows and adds them to all pairs at
// once by one rank-one update (BLAS calls with vectorised inner loops: one
// per row and one per tile, instead of one level-1 call per row and pair
// into k(k+1)/2 dense d×d blocks). Users are prepared in
// batches and added tile by tile so that a tile of the sums stays in cache;
// rows p where all of a user's rows are zero (background pixels) are
// skipped. Nothing d×d or dk×dk is formed per user, and the few per-chunk
// partial sums are kept on the engine across U-steps.

// altminChunks bounds the number of per-chunk partial sums (a fixed count,
// so that the reduction order, hence the bits of A, do not depend on the
// number of threads).
const altminChunks = 8

// altminBatch users are prepared together and their contributions added
// tile by tile: a tile of the pair sums (altminTile values, about 128 kB)
// stays in cache while every user of the batch adds to it, instead of the
// whole k(k+1)/2·d(d+1)/2 sums streaming through memory once per user.
const (
	altminBatch = 16
	altminTile  = 16384
)

// altminSlot is one prepared user of a batch.
type altminSlot struct {
	m int       // used rows
	g []float64 // portion×d: the used rows, g_r = t_r x_r/‖x_r‖
	f []float64 // k(k+1)/2: v̂_a v̂_b, a ≤ b
}

// altminScratch is one worker's scratch for the U-step statistics.
type altminScratch struct {
	slots []altminSlot
	gp    []float64 // portion: the used rows' entries at column p
	hrow  []float64 // the packed rows of H_j in one tile
	vh    []float64 // k: the unit head
	hb    []float64 // d: Σ_r ỹ_r g_r
}

// altminBuf holds the partial sums and the scratch of the statistics,
// reused by every U-step of a fit.
type altminBuf struct {
	d, k, portion int
	npair, size   int         // k(k+1)/2 and npair·d(d+1)/2
	tiles         []int       // row boundaries p of the tiles: 0 = tiles[0] < … < tiles[last] = d
	parts, bparts [][]float64 // per chunk: pair sums (packed, interleaved) and b
	sum           []float64
	ws            []altminScratch
}

// packedRow is the index of entry (p, p) in the row-major packed upper
// triangle of a d×d matrix.
func packedRow(p, d int) int { return p*d - p*(p-1)/2 }

// newAltminBuf allocates the buffers for dimension d, rank k and portion
// rows per user.
func newAltminBuf(d, k, portion int) *altminBuf {
	npair := k * (k + 1) / 2
	size := npair * d * (d + 1) / 2
	chunks := max(1, min(altminChunks, int(4e6/float64(size))))
	b := &altminBuf{d: d, k: k, portion: portion, npair: npair, size: size, sum: make([]float64, size), tiles: []int{0}}
	for p := 1; p <= d; p++ {
		if p == d || (packedRow(p+1, d)-packedRow(b.tiles[len(b.tiles)-1], d))*npair > altminTile {
			b.tiles = append(b.tiles, p)
		}
	}
	maxTile := 0
	for t := 0; t+1 < len(b.tiles); t++ {
		maxTile = max(maxTile, packedRow(b.tiles[t+1], d)-packedRow(b.tiles[t], d))
	}
	for c := 0; c < chunks; c++ {
		b.parts = append(b.parts, make([]float64, size))
		b.bparts = append(b.bparts, make([]float64, d*k))
	}
	for w := 0; w < workers(chunks); w++ {
		sc := altminScratch{gp: make([]float64, portion), hrow: make([]float64, maxTile), vh: make([]float64, k), hb: make([]float64, d)}
		for i := 0; i < altminBatch; i++ {
			sc.slots = append(sc.slots, altminSlot{g: make([]float64, portion*d), f: make([]float64, npair)})
		}
		b.ws = append(b.ws, sc)
	}
	return b
}

// altminStats accumulates, over the listed users, the U-step statistics
// A = Σ_j Σ_i W_ij W_ijᵀ (dk×dk, vec row-major: index p·k + a) and
// b = Σ_j Σ_i clip(y_ij, c_y) W_ij with W_ij = clip₂(vec(x_ij v_jᵀ), c_W),
// v_j being user j's least-squares head for U on its training half. It uses
// the Kronecker form A_j = H_j ⊗ v̂_j v̂_jᵀ (DERIVATIONS.md §5). At most
// portion rows per user are used. Users whose head is zero or not finite
// contribute nothing.
func altminStats(ctx context.Context, eng *fedrepEngine, u []float64, users []int32, cw, cy float64, portion int) (*mat.SymDense, []float64, error) {
	d, k := eng.d, eng.k
	buf := eng.altmin
	if buf == nil || buf.d != d || buf.k != k || buf.portion != portion {
		buf = newAltminBuf(d, k, portion)
		eng.altmin = buf
	}
	chunks := max(1, min(len(users), len(buf.parts)))
	err := parallelChunks(ctx, chunks, func(w, c int) {
		part, bpart := buf.parts[c], buf.bparts[c]
		clear(part)
		clear(bpart)
		sc := &buf.ws[w]
		lo, hi := chunkBounds(len(users), chunks, c)
		for b0 := lo; b0 < hi; b0 += altminBatch {
			ns := 0
			for _, ui := range users[b0:min(b0+altminBatch, hi)] {
				if altminPrepare(eng, eng.ws[w], u, int(ui), cw, cy, portion, sc, &sc.slots[ns], bpart) {
					ns++
				}
			}
			for t := 0; t+1 < len(buf.tiles); t++ {
				for i := 0; i < ns; i++ {
					altminAdd(&sc.slots[i], buf.tiles[t], buf.tiles[t+1], d, sc, part)
				}
			}
		}
	})
	if err != nil {
		return nil, nil, err
	}
	clear(buf.sum)
	bs := make([]float64, d*k)
	for c := 0; c < chunks; c++ {
		for i, v := range buf.parts[c] {
			buf.sum[i] += v
		}
		for i, v := range buf.bparts[c] {
			bs[i] += v
		}
	}
	return kroneckerToA(buf.sum, d, k, buf.tiles), bs, nil
}

// altminPrepare fits user ui's head, adds its b_j to bpart and fills slot
// with its scaled rows and pair weights; it reports false (and adds
// nothing) for a user whose head is zero or not finite.
func altminPrepare(eng *fedrepEngine, fws *workerScratch, u []float64, ui int, cw, cy float64, portion int, s *altminScratch, slot *altminSlot, bpart []float64) bool {
	d, k := eng.d, eng.k
	ur := eng.lay.users[ui]
	// The head: least squares on the whole training half for U.
	x, y := eng.span(fws, ur.t0, ur.t1)
	nv, ok := kernel.UnitHead(fws.ks.Head(eng.model(u, lossSquared), x, y), s.vh)
	if !ok {
		return false
	}
	pi := 0
	for a := 0; a < k; a++ {
		for b := a; b < k; b++ {
			slot.f[pi] = s.vh[a] * s.vh[b]
			pi++
		}
	}
	clear(s.hb)
	// The used rows, clipped and scaled (kernel.AltMinRow).
	m := 0
	for r := 0; r < min(portion, len(y)); r++ {
		g := slot.g[m*d : (m+1)*d]
		yt, ok := kernel.AltMinRow(x[r], y[r], nv, cw, cy, g)
		if !ok {
			continue
		}
		for p, gp := range g {
			s.hb[p] += yt * gp
		}
		m++
	}
	slot.m = m
	for p := 0; p < d; p++ {
		for a := 0; a < k; a++ {
			bpart[p*k+a] += s.hb[p] * s.vh[a]
		}
	}
	return true
}

// altminAdd adds rows p0 ≤ p < p1 (one tile) of the prepared user's
// H ⊗ v̂v̂ᵀ to the pair sums part, where the tile is stored as a k(k+1)/2 ×
// n_t block (pair by pair; n_t the packed entries of the tile's rows): each
// row p of H, h = G[:, p:]ᵀ g_{·p} (a matrix–vector product over the user's
// few rows), is written to its place in the tile's packed vector, and the
// tile is added to every pair at once as one rank-one update f hᵀ. Both are
// BLAS calls whose inner loops are the vectorised kernels: one per row and
// one per tile, instead of one level-1 call per row and pair. A row p where
// every used row is zero (a background pixel, a sparse feature) is zero.
func altminAdd(slot *altminSlot, p0, p1, d int, s *altminScratch, part []float64) {
	npair := len(slot.f)
	m := slot.m
	if m == 0 {
		return
	}
	s0, s1 := packedRow(p0, d), packedRow(p1, d)
	n := s1 - s0
	ht := s.hrow[:n]
	any := false
	for p := p0; p < p1; p++ {
		L := d - p
		o := packedRow(p, d) - s0
		seg := ht[o : o+L]
		nz := false
		for r := 0; r < m; r++ {
			s.gp[r] = slot.g[r*d+p]
			nz = nz || s.gp[r] != 0
		}
		if !nz {
			clear(seg)
			continue
		}
		any = true
		g := blas64.General{Rows: m, Cols: L, Stride: d, Data: slot.g[p : (m-1)*d+d]}
		blas64.Gemv(blas.Trans, 1, g, blas64.Vector{N: m, Inc: 1, Data: s.gp[:m]}, 0, blas64.Vector{N: L, Inc: 1, Data: seg})
	}
	if !any {
		return
	}
	blas64.Ger(1, blas64.Vector{N: npair, Inc: 1, Data: slot.f}, blas64.Vector{N: n, Inc: 1, Data: ht},
		blas64.General{Rows: npair, Cols: n, Stride: n, Data: part[npair*s0 : npair*s1]})
}

// kroneckerToA assembles the dk×dk symmetric A from the pair sums
// Σ_j v̂_a v̂_b H_j (the packed upper triangle of d×d, each tile of rows
// tiles[t] ≤ p < tiles[t+1] stored as a k(k+1)/2 × n_t block, pair by pair):
// entry (p·k + a, q·k + b).
func kroneckerToA(cs []float64, d, k int, tiles []int) *mat.SymDense {
	npair := k * (k + 1) / 2
	pairIdx := func(a, b int) int { // index of (min, max) among a ≤ b pairs
		if a > b {
			a, b = b, a
		}
		return a*k - a*(a-1)/2 + (b - a)
	}
	dk := d * k
	am := mat.NewSymDense(dk, nil)
	raw := am.RawSymmetric()
	for t := 0; t+1 < len(tiles); t++ {
		s0, s1 := packedRow(tiles[t], d), packedRow(tiles[t+1], d)
		n := s1 - s0
		blk := cs[npair*s0 : npair*s1]
		for p := tiles[t]; p < tiles[t+1]; p++ {
			o := packedRow(p, d) - s0 - p // entry (p, q) is column o + q of the block
			for a := 0; a < k; a++ {
				i := p*k + a
				for q := p; q < d; q++ {
					b0 := 0
					if q == p {
						b0 = a
					}
					for b := b0; b < k; b++ {
						raw.Data[i*raw.Stride+q*k+b] = blk[pairIdx(a, b)*n+o+q]
					}
				}
			}
		}
	}
	return am
}
