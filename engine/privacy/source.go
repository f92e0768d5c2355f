package privacy

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/kernel"
)

// Source is the randomness every dplr mechanism draws from: a ChaCha8
// stream keyed once from the operating system's CSPRNG or, reproducibly,
// from a user seed (results must then say they are not private against
// anyone who knows it). Release noise is exact discrete noise on a
// power-of-two grid (docs/privacy.md, "Randomness" and "Release noise").
// A Source is not safe for concurrent use; Split derives streams.
type Source struct {
	rng    *rand.ChaCha8
	seeded bool
	seed   uint64

	br bitReader // lazily consumed random bits for the exact samplers
}

// NewSecureSource returns a Source keyed from crypto/rand.
func NewSecureSource() (*Source, error) {
	var key [32]byte
	if _, err := crand.Read(key[:]); err != nil {
		return nil, fmt.Errorf("privacy: reading OS randomness: %w", err)
	}
	return newSource(rand.NewChaCha8(key), false, 0), nil
}

func newSource(rng *rand.ChaCha8, seeded bool, seed uint64) *Source {
	return &Source{rng: rng, seeded: seeded, seed: seed, br: newBitReader(rng)}
}

// NewSeededSource returns a reproducible Source. Output computed from it is
// not private against anyone who knows seed. The ChaCha8 key is the SHA-256
// of a fixed label and the seed, so nearby seeds give unrelated streams.
func NewSeededSource(seed uint64) *Source {
	var in [8]byte
	binary.LittleEndian.PutUint64(in[:], seed)
	h := sha256.New()
	h.Write([]byte("dplr/privacy seeded source v1\x00"))
	h.Write(in[:])
	var key [32]byte
	copy(key[:], h.Sum(nil))
	return newSource(rand.NewChaCha8(key), true, seed)
}

// Seeded reports whether the source was created from a user seed.
func (s *Source) Seeded() bool { return s.seeded }

// Split derives an independent Source (for a goroutine or a sub-task). Its
// key is 256 bits drawn from the parent's stream, so a split of a secure
// source is secure and a split of a seeded source is reproducible (and
// marked seeded).
func (s *Source) Split() *Source {
	var key [32]byte
	for i := 0; i < 4; i++ {
		binary.LittleEndian.PutUint64(key[8*i:], s.rng.Uint64())
	}
	return newSource(rand.NewChaCha8(key), s.seeded, s.seed)
}

// Uint64 returns 64 uniformly random bits.
func (s *Source) Uint64() uint64 { return s.rng.Uint64() }

// Rand returns a *rand.Rand view of the source, for algorithms (samplers,
// permutations) that take one. It shares the source's stream.
func (s *Source) Rand() *rand.Rand { return rand.New(s.rng) }

// Float64 returns a uniform draw in [0, 1) (53 random bits). It is for
// non-release uses only.
func (s *Source) Float64() float64 { return float64(s.rng.Uint64()>>11) / (1 << 53) }

// NormFloat64 returns a standard normal draw for non-release uses (sampler
// proposals, random test matrices, sketching). Mechanisms that release
// noised values must use Gaussian/AddGaussian instead: this is an ordinary
// floating-point sampler and is open to the attacks the release samplers
// are built to resist.
func (s *Source) NormFloat64() float64 { return rand.New(s.rng).NormFloat64() }

// GridBits fixes the release grid: noise of scale σ (or b) lives on the grid
// γ = 2^(⌊log2 σ⌋ − GridBits), so σ/γ ∈ [2^GridBits, 2^(GridBits+1)).
const GridBits = 40

// Scales accepted by the release samplers. Outside this range the grid
// would leave the normal floating-point range.
const (
	MinNoiseScale = 1e-250
	MaxNoiseScale = 1e250
)

// Grid returns the power-of-two grid γ on which release noise of scale
// scale (σ for Gaussian, b for Laplace) is drawn and onto which noised
// values are rounded. It returns 0 for a scale outside [MinNoiseScale,
// MaxNoiseScale] or not finite.
func Grid(scale float64) float64 {
	if !validScale(scale) {
		return 0
	}
	_, e := math.Frexp(scale) // scale = f·2^e, f ∈ [0.5, 1)
	return math.Ldexp(1, e-1-GridBits)
}

func validScale(scale float64) bool {
	return scale >= MinNoiseScale && scale <= MaxNoiseScale // false for NaN
}

// gridUnits returns γ = Grid(scale) and the integer scale ⌈scale/γ⌉ used by
// the discrete samplers (so the noise actually drawn is never smaller than
// asked for).
func gridUnits(scale float64) (gamma float64, units uint64, ok bool) {
	gamma = Grid(scale)
	if gamma == 0 {
		return 0, 0, false
	}
	return gamma, uint64(math.Ceil(scale / gamma)), true // exact: γ is a power of two
}

// snap rounds x to the nearest multiple of γ (a power of two); the result is
// exact. Values so large that they are already multiples of γ are returned
// as they are.
func snap(x, gamma, invGamma float64) float64 {
	if math.Abs(x) < (1<<52)*gamma {
		return math.Round(x*invGamma) * gamma
	}
	return x
}

// Gaussian returns one draw of discrete Gaussian noise with scale sigma on
// the grid Grid(sigma): the value γ·k with k drawn exactly from
// N_Z(0, (σ/γ)²) (σ/γ rounded up to an integer). Release a noised value
// through AddGaussian, which also rounds the value to the grid: adding this
// draw to an arbitrary float yourself gives up the protection. It returns
// NaN if sigma is outside [MinNoiseScale, MaxNoiseScale].
func (s *Source) Gaussian(sigma float64) float64 {
	gamma, units, ok := gridUnits(sigma)
	if !ok {
		return math.NaN()
	}
	return float64(s.discreteGaussian(units)) * gamma
}

// Laplace returns one draw of discrete Laplace noise with scale b on the
// grid Grid(b): γ·k with P(k) ∝ exp(−|k|/t), t = ⌈b/γ⌉. The same caveat as
// for Gaussian applies: release through AddLaplace. It returns NaN if b is
// outside [MinNoiseScale, MaxNoiseScale].
func (s *Source) Laplace(b float64) float64 {
	gamma, units, ok := gridUnits(b)
	if !ok {
		return math.NaN()
	}
	return float64(s.discreteLaplace(units)) * gamma
}

// AddGaussian releases dst with Gaussian noise of scale sigma: each element
// is rounded to the grid γ = Grid(sigma) and discrete Gaussian noise on the
// same grid is added (see Gaussian). The rounding moves each coordinate by
// at most γ/2, which the Spend helpers account for by adding γ·sqrt(dim) to
// the ℓ2 sensitivity. For an invalid sigma every element is set to NaN, so
// that nothing un-noised can be released.
func (s *Source) AddGaussian(dst []float64, sigma float64) {
	addOnGrid(dst, sigma, s.discreteGaussian)
}

// AddLaplace releases dst with Laplace noise of scale b: elements are
// rounded to the grid Grid(b) and discrete Laplace noise on that grid is
// added. Rounding adds at most γ per coordinate to the ℓ1 sensitivity,
// which the Laplace release accounts for. For an invalid b every element is set to
// NaN.
func (s *Source) AddLaplace(dst []float64, b float64) {
	addOnGrid(dst, b, s.discreteLaplace)
}

// addOnGrid rounds each element of dst to the grid Grid(scale) and adds
// draw(units) grid steps of noise, units = ⌈scale/γ⌉; for an invalid scale
// every element is set to NaN.
func addOnGrid(dst []float64, scale float64, draw func(units uint64) int64) {
	gamma, units, ok := gridUnits(scale)
	if !ok {
		for i := range dst {
			dst[i] = math.NaN()
		}
		return
	}
	inv := 1 / gamma
	for i, x := range dst {
		dst[i] = snap(x, gamma, inv) + float64(draw(units))*gamma
	}
}

// CheckScale reports whether scale can be used as a release noise scale.
func CheckScale(scale float64) error {
	if !validScale(scale) {
		return fmt.Errorf("noise scale %v outside [%g, %g]: %w", scale, MinNoiseScale, MaxNoiseScale, ErrInvalidBudget)
	}
	return nil
}

// AddSymmetricGaussian releases the symmetric matrix a in place: its upper
// triangle (diagonal included) is rounded to the grid and noised with
// i.i.d. Gaussian release noise of scale sigma; the lower triangle mirrors
// it. Declare dim = n(n+1)/2 to the accountant.
func (s *Source) AddSymmetricGaussian(a *mat.SymDense, sigma float64) {
	s.addAll((*Source).AddGaussian, sigma, upperRows(a)...)
}

// upperRows returns the rows of a's stored upper triangle, diagonal
// included: the n(n+1)/2 values a symmetric release noises.
func upperRows(a *mat.SymDense) [][]float64 {
	n := a.SymmetricDim()
	raw := a.RawSymmetric()
	rows := make([][]float64, n)
	for i := range rows {
		rows[i] = raw.Data[i*raw.Stride+i : i*raw.Stride+n]
	}
	return rows
}

// drawChunk is the number of values per chunk of a release drawn on
// several goroutines.
const drawChunk = 1 << 15

// addAll releases the values of parts in place with add (AddGaussian or
// AddLaplace) at scale. They are cut, in order, into chunks of drawChunk
// values (the last one shorter). Up to two chunks are drawn in order from
// s; more are drawn on up to GOMAXPROCS goroutines, chunk k from the k-th
// stream split from s (as secure and as reproducible as s). Each value is
// one independent draw of the same sampler either way, and which values s
// gives depends on the parts' lengths only, not on the number of threads.
func (s *Source) addAll(add func(*Source, []float64, float64), scale float64, parts ...[]float64) {
	chunks, room := [][][]float64{nil}, drawChunk
	for _, p := range parts {
		for len(p) > 0 {
			if room == 0 {
				chunks, room = append(chunks, nil), drawChunk
			}
			k, last := min(room, len(p)), len(chunks)-1
			chunks[last], p, room = append(chunks[last], p[:k]), p[k:], room-k
		}
	}
	if len(chunks) <= 2 {
		for _, p := range parts {
			add(s, p, scale)
		}
		return
	}
	srcs := make([]*Source, len(chunks))
	for k := range srcs {
		srcs[k] = s.Split()
	}
	_ = kernel.ParallelChunks(context.Background(), len(chunks), func(_, k int) { // never cancelled
		for _, p := range chunks[k] {
			add(srcs[k], p, scale)
		}
	})
}
