package pca

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// SinTheta returns the spectral and Frobenius norms of UUᵀ − VVᵀ for two
// p×r matrices with orthonormal columns, through the principal angles: the
// singular values of (I − UUᵀ)V are sin θ_k, the spectral norm is
// max sin θ_k and the Frobenius norm is √(2·Σ sin² θ_k). (Computing the
// sines directly keeps full relative accuracy for tiny angles, which
// √(1 − cos²) would not.)
func SinTheta(u, v mat.Matrix) (spectral, frobenius float64, err error) {
	pu, ru := u.Dims()
	pv, rv := v.Dims()
	if pu != pv || ru != rv {
		return 0, 0, fmt.Errorf("sin θ of %d×%d and %d×%d bases", pu, ru, pv, rv)
	}
	var m, proj, res mat.Dense
	m.Mul(u.T(), v)
	proj.Mul(u, &m)
	res.Sub(v, &proj)
	var svd mat.SVD
	if !svd.Factorize(&res, mat.SVDNone) {
		return 0, 0, fmt.Errorf("sin θ: SVD failed")
	}
	var s2 float64
	for _, s := range svd.Values(nil) {
		s = math.Min(s, 1)
		s2 += s * s
		spectral = math.Max(spectral, s)
	}
	return spectral, math.Sqrt(2 * s2), nil
}

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
