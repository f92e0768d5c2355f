// Package evaluate measures released estimates against the ground truth a
// synthetic data set was generated from: subspace distances for bases,
// relative Frobenius errors for matrices, captured variance and spectral
// errors; it is dplr's only subspace-metric package. These numbers use the truth and
// are for evaluation only; they are never part of a private release.
package evaluate

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// SinTheta returns the spectral and Frobenius norms of sin Θ(U, V), the
// sines of the principal angles between the column spans of U and V (same
// number of rows, full column rank, not necessarily orthonormal), computed
// directly for full relative accuracy at tiny angles. It is the only sin θ
// in dplr; the convention is in docs/estimators.md ("Subspace errors").
func SinTheta(u, v mat.Matrix) (spectral, frobenius float64, err error) {
	ur, uc := u.Dims()
	vr, vc := v.Dims()
	if ur != vr {
		return 0, 0, fmt.Errorf("sin-theta: bases with %d and %d rows", ur, vr)
	}
	qu, err := orthonormalBasis(u)
	if err != nil {
		return 0, 0, fmt.Errorf("sin-theta: first argument: %w", err)
	}
	qv, err := orthonormalBasis(v)
	if err != nil {
		return 0, 0, fmt.Errorf("sin-theta: second argument: %w", err)
	}
	if uc > vc {
		qu, qv = qv, qu
	}
	// res = (I − qv qvᵀ) qu: its singular values are the sines.
	var m, proj, res mat.Dense
	m.Mul(qv.T(), qu)
	proj.Mul(qv, &m)
	res.Sub(qu, &proj)
	var svd mat.SVD
	if !svd.Factorize(&res, mat.SVDNone) {
		return 0, 0, fmt.Errorf("sin-theta: SVD failed")
	}
	var s2 float64
	for _, s := range svd.Values(nil) {
		s = math.Min(s, 1)
		s2 += s * s
		spectral = math.Max(spectral, s)
	}
	return spectral, math.Sqrt(s2), nil
}

// orthonormalBasis returns an orthonormal basis of a's column span by thin
// QR, or an error when a has more columns than rows or is numerically
// rank-deficient (a zero or dependent column has no well-defined span).
func orthonormalBasis(a mat.Matrix) (*mat.Dense, error) {
	r, c := a.Dims()
	if c == 0 || c > r {
		return nil, fmt.Errorf("a %d×%d matrix has no %d-dimensional column span", r, c, c)
	}
	var qr mat.QR
	qr.Factorize(a)
	var rr mat.Dense
	qr.RTo(&rr)
	maxd := 0.0
	for i := 0; i < c; i++ {
		maxd = math.Max(maxd, math.Abs(rr.At(i, i)))
	}
	for i := 0; i < c; i++ {
		if d := math.Abs(rr.At(i, i)); d == 0 || d <= 1e-12*maxd {
			return nil, fmt.Errorf("a %d×%d matrix is rank-deficient (column %d)", r, c, i)
		}
	}
	var q mat.Dense
	qr.QTo(&q)
	return mat.DenseCopyOf(q.Slice(0, r, 0, c)), nil
}

// RelFrobenius returns ‖A − B‖_F / ‖B‖_F.
func RelFrobenius(a, b mat.Matrix) (float64, error) {
	ar, ac := a.Dims()
	br, bc := b.Dims()
	if ar != br || ac != bc {
		return 0, fmt.Errorf("relative error: %d×%d against %d×%d", ar, ac, br, bc)
	}
	var d mat.Dense
	d.Sub(a, b)
	nb := mat.Norm(b, 2)
	if nb == 0 {
		return mat.Norm(&d, 2), nil
	}
	return mat.Norm(&d, 2) / nb, nil
}

// Release is the release class of every Metric: computed from the truth
// (and through the estimate, from the data), for evaluation only, never
// part of a private release. It matches sdk.Evaluation.
const Release = "evaluation"

// Metric is one evaluation number.
type Metric struct {
	Name    string  `json:"name"`
	Value   float64 `json:"value"`
	Doc     string  `json:"doc"`
	Release string  `json:"release"` // always Release
}

// Against compares named outputs with named truth matrices. Conventions:
// an output and a truth of the same name are compared; names that denote
// bases ("U", "V", "U_star") get sin-θ distances, other matrices a
// relative Frobenius error. Truth matrices without an output are skipped.
func Against(outputs, truth map[string]*mat.Dense) []Metric {
	var out []Metric
	for _, k := range slices.Sorted(maps.Keys(truth)) {
		o, ok := outputs[k]
		if !ok {
			continue
		}
		t := truth[k]
		if isBasis(k) {
			if _, tc := t.Dims(); tc > 0 {
				s, f, err := SinTheta(o, t)
				if err == nil {
					out = append(out,
						Metric{k + ".sin_theta_spectral", s, "‖sin Θ(" + k + ", truth)‖₂", Release},
						Metric{k + ".sin_theta_frobenius", f, "‖sin Θ(" + k + ", truth)‖_F", Release})
				}
			}
			continue
		}
		if e, err := RelFrobenius(o, t); err == nil {
			out = append(out, Metric{k + ".rel_frobenius", e, "‖" + k + " − truth‖_F / ‖truth‖_F", Release})
		}
	}
	return out
}

func isBasis(name string) bool {
	switch name {
	case "U", "V", "U_star", "basis":
		return true
	}
	return false
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
// matrix given as dense (its symmetric part is used): the spectral norm of
// a covariance error Σ̃ − Σ.
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

// Ratio names of the captured-variance evaluation (every PCA estimator
// reports them with evaluate=true).
const (
	// RatioCentred is the captured-variance ratio on the centred
	// covariance: scikit-learn's convention, the figure to quote.
	RatioCentred = "captured_variance_ratio"
	// RatioUncentred is the same ratio on the uncentred second moment
	// XᵀX/n, which flatters subspaces that only find the mean direction.
	RatioUncentred = "captured_variance_ratio_uncentred"
)

// CapturedRatio returns tr(UᵀAU)/Σ_{k≤r} λ_k(A): the share of the best
// rank-r captured variance of A that the p×r orthonormal basis U captures
// (1 for A's own top-r eigenvectors). topR are A's r largest eigenvalues.
// With A the covariance of the rows centred at their empirical mean this
// is the ratio scikit-learn's PCA optimises; with A = XᵀX/n it is the
// uncentred ratio.
func CapturedRatio(a mat.Symmetric, u mat.Matrix, topR []float64) float64 {
	var best float64
	for _, v := range topR {
		best += v
	}
	return CapturedVariance(a, u) / best
}

// Centre returns the covariance S − m·mᵀ of rows whose second moment is S
// and whose mean is m (S is not modified).
func Centre(s mat.Symmetric, m []float64) *mat.SymDense {
	p := s.SymmetricDim()
	out := mat.NewSymDense(p, nil)
	for i := 0; i < p; i++ {
		for j := i; j < p; j++ {
			out.SetSym(i, j, s.At(i, j)-m[i]*m[j])
		}
	}
	return out
}
