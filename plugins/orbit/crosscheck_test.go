package orbit

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/plugins/internal/bingham"
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

// complementBasis returns a d×(d−len(cols)) orthonormal basis of the
// orthogonal complement of the given orthonormal columns of u: the
// eigenvectors of I − Σ u_c u_cᵀ with eigenvalue 1.
func complementBasis(u *mat.Dense, cols []int, be backend.Backend) (*mat.Dense, error) {
	d, _ := u.Dims()
	proj := mat.NewSymDense(d, nil)
	for r := 0; r < d; r++ {
		for c := r; c < d; c++ {
			v := 0.0
			if r == c {
				v = 1
			}
			for _, t := range cols {
				v -= u.At(r, t) * u.At(c, t)
			}
			proj.SetSym(r, c, v)
		}
	}
	_, vecs, err := be.EigSym(proj)
	if err != nil {
		return nil, fmt.Errorf("complement basis: %w", err)
	}
	return mat.DenseCopyOf(vecs.Slice(0, d, 0, d-len(cols))), nil
}

// sampleInSubspace draws a unit vector x = N z in the span of the
// orthonormal columns of nb with density ∝ exp(beta·xᵀAx), exactly
// (vector Bingham with matrix NᵀAN).
func sampleInSubspace(ctx context.Context, rnd *privacy.Source, a mat.Symmetric, nb *mat.Dense, beta float64, be backend.Backend) ([]float64, bingham.Diagnostics, error) {
	d, m := nb.Dims()
	var an mat.Dense
	if err := be.Mul(&an, a, false, nb, false); err != nil {
		return nil, bingham.Diagnostics{}, err
	}
	var nan mat.Dense
	if err := be.Mul(&nan, nb, true, &an, false); err != nil {
		return nil, bingham.Diagnostics{}, err
	}
	sub := mat.NewSymDense(m, nil)
	for r := 0; r < m; r++ {
		for c := r; c < m; c++ {
			sub.SetSym(r, c, (nan.At(r, c)+nan.At(c, r))/2)
		}
	}
	s, err := bingham.New(sub, beta, be)
	if err != nil {
		return nil, bingham.Diagnostics{}, err
	}
	z, dg, err := s.Sample(ctx, rnd)
	if err != nil {
		return nil, dg, err
	}
	x := make([]float64, d)
	for r := 0; r < d; r++ {
		var v float64
		for c := 0; c < m; c++ {
			v += nb.At(r, c) * z[c]
		}
		x[r] = v
	}
	return x, dg, nil
}
