package study

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"

	"github.com/dplr/dplr/engine/dataio"
)

// heavyTail rewrites the rows of a `dplr gen spiked` directory's X.npy as a
// scale mixture: a fraction frac of the rows, chosen at random, is
// multiplied by 10^u with u uniform on [2, 4] (100× to 10000× longer rows),
// then every row is shifted by a common mean μ of norm meanNorm in a
// random direction. Multiplying rows by independent scales and shifting
// them keeps the covariance's eigenvectors, so the directory's truth U
// stays the subspace to recover; the norms become heavy-tailed and the
// mean matters, which is what makes a fixed clip chosen without looking at
// the data fail (too large: the noise drowns the spikes; too small: the
// clipped mean misses μ and the mean direction leaks into the subspace).
func heavyTail(dir string, frac, meanNorm float64, seed uint64) error {
	path := filepath.Join(dir, "X.npy")
	d, err := dataio.Load(path, dataio.LoadOptions{})
	if err != nil {
		return fmt.Errorf("heavy tail: %w", err)
	}
	n, p := d.X.Dims()
	rng := rand.New(rand.NewPCG(seed, 17))
	mu := make([]float64, p)
	var norm float64
	for j := range mu {
		mu[j] = rng.NormFloat64()
		norm += mu[j] * mu[j]
	}
	for j := range mu {
		mu[j] *= meanNorm / math.Sqrt(norm)
	}
	raw := make([]float64, 0, n*p)
	scaled := 0
	for i := 0; i < n; i++ {
		f := 1.0
		if rng.Float64() < frac {
			f = math.Pow(10, 2+2*rng.Float64())
			scaled++
		}
		for j, v := range d.X.RawRowView(i)[:p] {
			raw = append(raw, mu[j]+f*v)
		}
	}
	if err := dataio.SaveNPYFloat64(path, []int{n, p}, raw); err != nil {
		return fmt.Errorf("heavy tail: %w", err)
	}
	fmt.Printf("heavy tail: %d of %d rows of %s scaled by 10^U(2,4), all shifted by a mean of norm %g\n", scaled, n, path, meanNorm)
	return nil
}
