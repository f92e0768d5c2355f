package fedrep

import (
	"fmt"
	"math"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// The private quantile of DERIVATIONS.md §12: a noisy histogram of the
// users' norms on a fixed, data-independent grid of log-spaced bins, from
// which a quantile is read by post-processing.

const (
	// quantileBinsPerOctave is the resolution of the grid (edges 2^(j/4)).
	quantileBinsPerOctave = 4
	// quantileMinExp and quantileMaxExp bound the grid: 2^-40 … 2^40.
	quantileMinExp, quantileMaxExp = -40, 40
)

// quantileEdges returns the public upper edges of the histogram's bins:
// bin 0 holds values ≤ edges[0] (including zero and values that are not
// numbers), bin j values in (edges[j−1], edges[j]], and the last bin
// (index len(edges)) values above the largest edge.
func quantileEdges() []float64 {
	var e []float64
	for j := quantileMinExp * quantileBinsPerOctave; j <= quantileMaxExp*quantileBinsPerOctave; j++ {
		e = append(e, math.Exp2(float64(j)/quantileBinsPerOctave))
	}
	return e
}

// quantileFromCounts reads the q-quantile from (noisy) bin counts: the
// smallest edge whose cumulative count reaches q·total, the largest edge
// when none does. Pure post-processing of the counts.
func quantileFromCounts(counts []float64, edges []float64, q float64, total int) float64 {
	target := q * float64(total)
	var cum float64
	for j, e := range edges {
		cum += counts[j]
		if cum >= target {
			return e
		}
	}
	return edges[len(edges)-1]
}

// quantileSensitivity is the ℓ2 sensitivity of the histogram under
// replace-one neighbours: one user's value leaves one bin and enters
// another (DERIVATIONS.md §12).
var quantileSensitivity = math.Sqrt2

// privateQuantileCounts releases the histogram h (bin counts of n users'
// values on the grid quantileEdges, computed locally or by a pass) as one
// Gaussian step and returns its q-quantile.
func privateQuantileCounts(run *sdk.Run, name string, h []float64, q float64, n int, b privacy.Budget) (float64, error) {
	edges := quantileEdges()
	if len(h) != len(edges)+1 {
		return 0, fmt.Errorf("%s: %d bin counts for %d bins", name, len(h), len(edges)+1)
	}
	rel, err := run.Acct.Gaussian(name, quantileSensitivity, len(h), b)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	if err := rel.Add(run.Rand, h); err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return quantileFromCounts(h, edges, q, n), nil
}
