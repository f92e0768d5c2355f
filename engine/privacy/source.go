package privacy

import (
	crand "crypto/rand"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// Source is the randomness every dplr mechanism draws from. By default it is
// a ChaCha8 stream keyed once from the operating system's CSPRNG; with a
// user seed it is reproducible, and results produced from it must say they
// are not private against anyone who knows the seed.
//
// A Source is not safe for concurrent use; use Split to derive independent
// streams for goroutines.
type Source struct {
	rng    *rand.ChaCha8
	seeded bool
	seed   uint64
}

// NewSecureSource returns a Source keyed from crypto/rand.
func NewSecureSource() (*Source, error) {
	var key [32]byte
	if _, err := crand.Read(key[:]); err != nil {
		return nil, fmt.Errorf("privacy: reading OS randomness: %w", err)
	}
	return &Source{rng: rand.NewChaCha8(key)}, nil
}

// NewSeededSource returns a reproducible Source. Output computed from it is
// not private against anyone who knows seed.
func NewSeededSource(seed uint64) *Source {
	var key [32]byte
	for i := 0; i < 4; i++ {
		v := seed + uint64(i)*0x9e3779b97f4a7c15
		for j := 0; j < 8; j++ {
			key[8*i+j] = byte(v >> (8 * j))
		}
	}
	return &Source{rng: rand.NewChaCha8(key), seeded: true, seed: seed}
}

// Seeded reports whether the source was created from a user seed.
func (s *Source) Seeded() bool { return s.seeded }

// Split derives an independent Source (for a goroutine or a sub-task). A
// split of a seeded source is seeded (reproducibly); a split of a secure
// source is keyed from the parent's stream.
func (s *Source) Split() *Source {
	var key [32]byte
	for i := 0; i < 4; i++ {
		v := s.rng.Uint64()
		for j := 0; j < 8; j++ {
			key[8*i+j] = byte(v >> (8 * j))
		}
	}
	return &Source{rng: rand.NewChaCha8(key), seeded: s.seeded, seed: s.seed}
}

// Uint64 returns 64 uniformly random bits.
func (s *Source) Uint64() uint64 { return s.rng.Uint64() }

// Rand returns a *rand.Rand view of the source, for algorithms (samplers,
// permutations) that take one. It shares the source's stream.
func (s *Source) Rand() *rand.Rand { return rand.New(s.rng) }

// Float64 returns a uniform draw in [0, 1).
func (s *Source) Float64() float64 { return float64(s.rng.Uint64()>>11) / (1 << 53) }

// NormFloat64 returns a standard normal draw for non-release uses (sampler
// proposals, random test matrices, sketching). Mechanisms that release
// noised values must use Gaussian instead.
func (s *Source) NormFloat64() float64 { return rand.New(s.rng).NormFloat64() }

// Gaussian returns one draw of N(0, sigma²) for use as privacy noise.
func (s *Source) Gaussian(sigma float64) float64 {
	return sigma * rand.New(s.rng).NormFloat64()
}

// Laplace returns one draw of Laplace(0, b) for use as privacy noise.
func (s *Source) Laplace(b float64) float64 {
	u := s.Float64() - 0.5
	if u < 0 {
		return b * math.Log1p(2*u)
	}
	return -b * math.Log1p(-2*u)
}

// AddGaussian adds i.i.d. N(0, sigma²) noise to every element of dst.
func (s *Source) AddGaussian(dst []float64, sigma float64) {
	for i := range dst {
		dst[i] += s.Gaussian(sigma)
	}
}

// AddLaplace adds i.i.d. Laplace(0, b) noise to every element of dst.
func (s *Source) AddLaplace(dst []float64, b float64) {
	for i := range dst {
		dst[i] += s.Laplace(b)
	}
}

// GaussianMatrix returns an r×c matrix of i.i.d. N(0, sigma²) noise.
func (s *Source) GaussianMatrix(r, c int, sigma float64) *mat.Dense {
	data := make([]float64, r*c)
	s.AddGaussian(data, sigma)
	return mat.NewDense(r, c, data)
}

// SymmetricGaussian returns an n×n symmetric noise matrix whose entries on
// and above the diagonal are i.i.d. N(0, sigma²) (the same variance on the
// diagonal, not GOE scaling) and whose lower triangle mirrors the upper.
func (s *Source) SymmetricGaussian(n int, sigma float64) *mat.SymDense {
	out := mat.NewSymDense(n, nil)
	raw := out.RawSymmetric()
	for i := 0; i < n; i++ {
		row := raw.Data[i*raw.Stride+i : i*raw.Stride+n]
		s.AddGaussian(row, sigma)
	}
	return out
}
