// Package analyzegauss is the Analyze Gauss mechanism of Dwork, Talwar,
// Thakurta and Zhang (2014) shared by pca-analyze-gauss and orbit-gauss: a
// clipped second moment S is released as S + E, E symmetric Gaussian drawn
// by the declared privacy.Release (S rounded to its grid first), and the
// top-k eigenvectors of S + E are the private subspace.
package analyzegauss

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/plugins/internal/pcaeval"
)

// Dim is the number of noised coordinates of a p×p symmetric release: its
// upper triangle, diagonal included.
func Dim(p int) int { return p * (p + 1) / 2 }

// Noisy returns S + E: a copy of s whose upper triangle is rounded to the
// grid of the declared release rel and noised there (rel draws exactly once,
// on the p(p+1)/2 values it was declared for). s is not modified.
func Noisy(rnd *privacy.Source, rel *privacy.Release, s mat.Symmetric) (*mat.SymDense, error) {
	out := mat.NewSymDense(s.SymmetricDim(), nil)
	out.CopySym(s)
	if err := rel.AddSym(rnd, out); err != nil {
		return nil, fmt.Errorf("analyze gauss: %w", err)
	}
	return out, nil
}

// Release is the mechanism: S + E (Noisy) and its top-k eigenpairs
// (eigenvalues descending, eigenvectors p×k orthonormal). With standardise
// it returns instead D^{-1/2}(S + E)D^{-1/2}, D the diagonal of S + E
// floored at twice the noise deviation, its top-k eigenpairs and √D:
// correlation PCA of the release, post-processing (plugins/pca's
// DERIVATIONS.md §10.1).
func Release(ctx context.Context, be backend.Backend, rnd *privacy.Source, rel *privacy.Release, s mat.Symmetric, k int, standardise bool) (*mat.SymDense, []float64, *mat.Dense, []float64, error) {
	noisy, err := Noisy(rnd, rel, s)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, nil, err
	}
	var scale []float64
	if standardise {
		scale = make([]float64, noisy.SymmetricDim())
		for j := range scale {
			if scale[j] = math.Sqrt(math.Max(noisy.At(j, j), 2*rel.Scale())); !(scale[j] > 0) {
				scale[j] = 1 // a zero column released without noise
			}
		}
		pcaeval.DivideMoments(scale, nil, noisy)
	}
	vals, vecs, err := be.EigSymTop(noisy, k)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("top-%d eigenvectors of S + E: %w", k, err)
	}
	return noisy, vals, vecs, scale, nil
}

// RestOfTrace is tr(m) minus the sum of vals: for the released S + E and
// its top-k eigenvalues, the sum of its other eigenvalues, from which the
// explained-variance ratios follow (post-processing).
func RestOfTrace(m mat.Symmetric, vals []float64) float64 {
	rest := mat.Trace(m)
	for _, v := range vals {
		rest -= v
	}
	return rest
}
