package orbit

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/privacy"
)

// ColumnGibbsSample is an independent cross-check sampler for the orbit
// exponential mechanism (Hoff 2009, as used by Chaudhuri, Sarwate & Sinha
// 2013): starting from a Haar frame, each sweep redraws every column u_i,
// i ≤ k, exactly from its conditional law given the others, the vector
// Bingham law exp(β λ_i uᵀAu) on the unit sphere of the complement of the
// other k−1 columns. Like Givens–Gibbs it is stationary-exact and not
// certified after finitely many sweeps. It costs k eigendecompositions of
// order d−k+1 per sweep, so it is meant for tests, not releases.
func ColumnGibbsSample(ctx context.Context, rnd *privacy.Source, a mat.Symmetric, lambda []float64, beta float64, sweeps int, be backend.Backend) (*mat.Dense, error) {
	d := a.SymmetricDim()
	k := len(lambda)
	if err := checkRank(k, d); err != nil {
		return nil, err
	}
	if math.IsNaN(beta) || math.IsInf(beta, 0) || beta < 0 {
		return nil, fmt.Errorf("inverse temperature %v must be finite and ≥ 0", beta)
	}
	if be == nil {
		be = backend.Default()
	}
	q, err := HaarOrthogonal(rnd.Rand(), d, be)
	if err != nil {
		return nil, err
	}
	u := mat.DenseCopyOf(q.Slice(0, d, 0, k))
	others := make([]int, 0, k)
	for sw := 0; sw < sweeps; sw++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for i := 0; i < k; i++ {
			others = others[:0]
			for j := 0; j < k; j++ {
				if j != i {
					others = append(others, j)
				}
			}
			nb, err := complementBasis(u, others, be)
			if err != nil {
				return nil, err
			}
			x, _, err := sampleInSubspace(ctx, rnd, a, nb, beta*lambda[i], be)
			if err != nil {
				return nil, err
			}
			u.SetCol(i, x)
		}
	}
	return u, nil
}
