package privacy

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"
)

// ksCrit is the two-sided Kolmogorov–Smirnov critical distance at level
// α = 0.001 for n draws (asymptotic, c(α) = 1.95).
func ksCrit(n int) float64 { return 1.95 / math.Sqrt(float64(n)) }

// Goodness of fit of the samplers not covered by the release-noise tests in
// source_test.go: the non-release Float64 and NormFloat64 (and the
// *rand.Rand view), at several scales, KS against the exact law. Fixed
// seeds: the test is deterministic.
func TestNonReleaseSamplersKS(t *testing.T) {
	const n = 20000
	cases := []struct {
		name string
		draw func(s *Source) float64
		cdf  func(float64) float64
	}{
		{"Float64 on [0,1)", func(s *Source) float64 { return s.Float64() }, distuv.Uniform{Min: 0, Max: 1}.CDF},
		{"NormFloat64", func(s *Source) float64 { return s.NormFloat64() }, distuv.UnitNormal.CDF},
		{"Rand().NormFloat64", func(s *Source) float64 { return s.Rand().NormFloat64() }, distuv.UnitNormal.CDF},
	}
	for ci, c := range cases {
		for si, scale := range []float64{1e-9, 1, 3e5} {
			t.Run(fmt.Sprintf("%s/scale=%g", c.name, scale), func(t *testing.T) {
				src := NewSeededSource(uint64(500 + 10*ci + si))
				x := make([]float64, n)
				for i := range x {
					x[i] = c.draw(src) * scale
				}
				d := ksStat(x, func(v float64) float64 { return c.cdf(v / scale) })
				assert.Less(t, d, ksCrit(n), "KS distance %g", d)
			})
		}
	}
}

// The matrix and vector helpers draw release noise element by element (in
// chunks from split streams above 2·drawChunk values); their
// entries (the upper triangle with the diagonal for the symmetric ones) must
// follow N(0, σ²) (Laplace(0, b) for AddLaplace) at every scale, and the
// noised value must be centred on the input.
func TestNoiseHelpersKS(t *testing.T) {
	type helper struct {
		name string
		// draw returns the noise values the helper added, in units of scale.
		draw func(s *Source, scale float64) []float64
		cdf  func(float64) float64
	}
	upper := func(m *mat.SymDense) []float64 {
		n := m.SymmetricDim()
		out := make([]float64, 0, n*(n+1)/2)
		for i := 0; i < n; i++ {
			for j := i; j < n; j++ {
				out = append(out, m.At(i, j))
			}
		}
		return out
	}
	scaled := func(v []float64, c, scale float64) []float64 {
		for i := range v {
			v[i] = (v[i] - c) / scale
		}
		return v
	}
	helpers := []helper{
		{"AddSymmetricGaussian on zero", func(s *Source, sc float64) []float64 {
			a := mat.NewSymDense(160, nil)
			s.AddSymmetricGaussian(a, sc)
			return scaled(upper(a), 0, sc)
		}, distuv.UnitNormal.CDF},
		{"AddSymmetricGaussian", func(s *Source, sc float64) []float64 {
			const c = 2.5 // a constant matrix: the noised entries minus c
			n := 160
			a := mat.NewSymDense(n, nil)
			for i := 0; i < n; i++ {
				for j := i; j < n; j++ {
					a.SetSym(i, j, c)
				}
			}
			s.AddSymmetricGaussian(a, sc)
			return scaled(upper(a), c, sc)
		}, distuv.UnitNormal.CDF},
		{"AddGaussian vector", func(s *Source, sc float64) []float64 {
			v := make([]float64, 15000)
			for i := range v {
				v[i] = -7
			}
			s.AddGaussian(v, sc)
			return scaled(v, -7, sc)
		}, distuv.UnitNormal.CDF},
		{"AddLaplace vector", func(s *Source, sc float64) []float64 {
			v := make([]float64, 15000)
			for i := range v {
				v[i] = 1
			}
			s.AddLaplace(v, sc)
			return scaled(v, 1, sc)
		}, distuv.Laplace{Mu: 0, Scale: 1}.CDF},
		{"AddSymmetricGaussian in chunks", func(s *Source, sc float64) []float64 {
			a := mat.NewSymDense(400, nil) // 80,200 values: three chunks on several goroutines
			s.AddSymmetricGaussian(a, sc)
			return scaled(upper(a), 0, sc)
		}, distuv.UnitNormal.CDF},
		{"Laplace in chunks", func(s *Source, sc float64) []float64 {
			v := make([]float64, 3*drawChunk)
			s.addAll((*Source).AddLaplace, sc, v[:100], v[100:])
			return scaled(v, 0, sc)
		}, distuv.Laplace{Mu: 0, Scale: 1}.CDF},
	}
	for hi, h := range helpers {
		for si, scale := range []float64{1e-6, 0.7, 40} {
			t.Run(fmt.Sprintf("%s/scale=%g", h.name, scale), func(t *testing.T) {
				src := NewSeededSource(uint64(700 + 10*hi + si))
				x := h.draw(src, scale)
				require.Greater(t, len(x), 10000)
				d := ksStat(x, h.cdf)
				assert.Less(t, d, ksCrit(len(x)), "KS distance %g over %d entries", d, len(x))
			})
		}
	}
}

// uniformN underlies the discrete samplers' fractional part; χ² on binned
// draws for small, medium and grid-sized ranges (the grid scale ⌈σ/γ⌉ lies
// in [2^40, 2^41]).
func TestUniformNScales(t *testing.T) {
	const draws, bins = 40000, 16
	for i, n := range []uint64{3, 1000, 1<<40 + 12345, 3<<39 - 1} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			src := NewSeededSource(uint64(800 + i))
			nb := bins
			if n < bins {
				nb = int(n)
			}
			// Bin b holds the values v with ⌊v·nb/n⌋ = b; its probability is
			// the count of such integers over n.
			prob := make([]float64, nb)
			for b := 0; b < nb; b++ {
				lo := (uint64(b)*n + uint64(nb) - 1) / uint64(nb) // ⌈b·n/nb⌉
				hi := (uint64(b+1)*n + uint64(nb) - 1) / uint64(nb)
				prob[b] = float64(hi-lo) / float64(n)
			}
			obs := make([]int, nb)
			for k := 0; k < draws; k++ {
				v := src.uniformN(n)
				require.Less(t, v, n)
				// v·nb/n without overflow: n < 2^42 and nb ≤ 16.
				obs[v*uint64(nb)/n]++
			}
			p := chiSquareP(t, obs, prob, draws)
			assert.Greater(t, p, 1e-3, "χ² p = %g", p)
		})
	}
}
