package pca

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// CapturedVariance returns tr(UᵀSU) for a p×r basis U and a symmetric S:
// the variance of S's distribution that the subspace captures.
func CapturedVariance(s mat.Symmetric, u mat.Matrix) float64 {
	p, r := u.Dims()
	var su mat.Dense
	su.Mul(s, u)
	var t float64
	for k := 0; k < r; k++ {
		for i := 0; i < p; i++ {
			t += u.At(i, k) * su.At(i, k)
		}
	}
	return t
}

// SpectralNorm returns the largest absolute eigenvalue of a symmetric
// matrix given as dense (its symmetric part is used).
func SpectralNorm(a mat.Matrix) (float64, error) {
	n, c := a.Dims()
	if n != c {
		return 0, fmt.Errorf("spectral norm of a non-square %d×%d matrix", n, c)
	}
	s := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			s.SetSym(i, j, 0.5*(a.At(i, j)+a.At(j, i)))
		}
	}
	var es mat.EigenSym
	if !es.Factorize(s, false) {
		return 0, fmt.Errorf("spectral norm: eigendecomposition failed")
	}
	var m float64
	for _, v := range es.Values(nil) {
		m = math.Max(m, math.Abs(v))
	}
	return m, nil
}
