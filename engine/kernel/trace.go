package kernel

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
)

// The trace kernels aggregate trace-regression samples: sample i is a
// d1×d2 matrix X_i, flattened row-major to x_i (length p = d1·d2), and a
// response y_i. A block of samples is given as x (row i at
// x[i·stride : i·stride+p]) and y (one response per row); every kernel
// adds its per-sample terms to sum (length p) in row order, so that a sum
// over blocks is the sum over the samples up to the order of the blocks.

// BoundSlack is the relative allowance for rounding in the bound a sum
// must satisfy: a sum of n terms of norm ≤ c has norm ≤ n·c up to
// rounding, and a forged or unclipped sum exceeds it by far more.
const BoundSlack = 1 + 1e-9

// Moment adds Σ_i y_i x_i over the block to sum. Its terms are unbounded.
func Moment(sum, x []float64, stride int, y []float64) {
	p := len(sum)
	for i, yi := range y {
		floats.AddScaled(sum, yi, x[i*stride:i*stride+p])
	}
}

// ClippedMoment adds Σ_i clip(y_i, cy)·clip(x_i, cx) over the block to
// sum, where |clip(y, cy)| = min(|y|, cy) and clip(x, cx) =
// x·min(1, cx/‖x‖₂), and returns the number of samples where either clip
// was active. Every term has norm ≤ cx·cy (ClippedMomentSensitivity).
func ClippedMoment(sum, x []float64, stride int, y []float64, cx, cy float64) int {
	p := len(sum)
	clipped := 0
	for i, yi := range y {
		xi := x[i*stride : i*stride+p]
		f := ClipFactor(xi, cx)
		c := f < 1
		if math.Abs(yi) > cy {
			yi, c = math.Copysign(cy, yi), true
		}
		if c {
			clipped++
		}
		floats.AddScaled(sum, f*yi, xi)
	}
	return clipped
}

// ClippedMomentSensitivity is the replace-one sensitivity 2·cx·cy of the
// ClippedMoment sum (each term has norm ≤ cx·cy).
func ClippedMomentSensitivity(cx, cy float64) float64 { return 2 * cx * cy }

// CheckClippedMoment checks the bound a ClippedMoment sum over n samples
// satisfies: ‖sum‖ ≤ n·cx·cy (up to BoundSlack).
func CheckClippedMoment(sum []float64, n int64, cx, cy float64) error {
	if Norm(sum) > float64(n)*cx*cy*BoundSlack {
		return fmt.Errorf("the sum's norm exceeds n·cx·cy: the samples were not clipped to ‖x_i‖ ≤ %g, |y_i| ≤ %g", cx, cy)
	}
	return nil
}

// Residual returns <x, m> − y: the residual of a sample at the iterate m.
func Residual(x, m []float64, y float64) float64 { return floats.Dot(x, m) - y }

// Gradient adds Σ_i res_i x_i over the block to sum, with res_i =
// <x_i, m> − y_i at the iterate m (the gradient of ½Σ res_i² in m), and
// returns the loss Σ_i res_i². Its terms are unbounded.
func Gradient(sum, x []float64, stride int, y, m []float64) float64 {
	p := len(sum)
	var loss float64
	for i, yi := range y {
		xi := x[i*stride : i*stride+p]
		res := Residual(xi, m, yi)
		loss += res * res
		floats.AddScaled(sum, res, xi)
	}
	return loss
}

// Tangent is the tangent space of the rank-r manifold of d1×d2 matrices at
// a point with column space U and row space V: U is d1×r with orthonormal
// columns, Vt = Vᵀ is r×d2 with orthonormal rows, both row-major.
type Tangent struct {
	D1, D2, R int
	U, Vt     []float64
}

// OrthoTol is how far UᵀU and VᵀV may be from the identity in a tangent
// space a host accepts: the bound ‖P_T(·)‖ ≤ τ means nothing for a P_T
// that is not an orthogonal projection, and the estimators' factors come
// from SVDs and QRs, orthonormal to about 1e-14.
const OrthoTol = 1e-8

// Check reports whether U and Vt have their shapes and orthonormal
// columns and rows up to OrthoTol in every entry of UᵀU − I and VᵀV − I.
func (t Tangent) Check() error {
	if t.R < 1 || t.R > min(t.D1, t.D2) || len(t.U) != t.D1*t.R || len(t.Vt) != t.R*t.D2 {
		return fmt.Errorf("tangent space of rank %d: U has %d values, Vᵀ %d, want %d×%d and %d×%d", t.R, len(t.U), len(t.Vt), t.D1, t.R, t.R, t.D2)
	}
	if !orthonormal(t.U, t.D1, t.R, t.R, 1) {
		return fmt.Errorf("u does not have orthonormal columns")
	}
	if !orthonormal(t.Vt, t.D2, t.R, 1, t.D2) {
		return fmt.Errorf("vt does not have orthonormal rows")
	}
	return nil
}

// orthonormal reports whether the r vectors of length d, entry i of
// vector k at a[i·is + k·ks], are orthonormal up to OrthoTol.
func orthonormal(a []float64, d, r, is, ks int) bool {
	for k := 0; k < r; k++ {
		for l := k; l < r; l++ {
			var s float64
			for i := 0; i < d; i++ {
				s += a[i*is+k*ks] * a[i*is+l*ks]
			}
			if k == l {
				s--
			}
			if math.Abs(s) > OrthoTol {
				return false
			}
		}
	}
	return true
}

// Project returns P_T(a) = UUᵀa + aVVᵀ − UUᵀaVVᵀ for the row-major d1×d2
// a: the orthogonal projection onto the tangent space.
func (t Tangent) Project(a []float64) []float64 {
	d1, d2, r, u, vt := t.D1, t.D2, t.R, t.U, t.Vt
	uta := make([]float64, r*d2) // Uᵀa
	av := make([]float64, d1*r)  // aV
	t.sweep(a, uta, av)
	utav := make([]float64, r*r) // UᵀaV
	for k := 0; k < r; k++ {
		for l := 0; l < r; l++ {
			utav[k*r+l] = floats.Dot(uta[k*d2:(k+1)*d2], vt[l*d2:(l+1)*d2])
		}
	}
	// P_T(a) = U(Uᵀa) + (aV − UUᵀaV)Vᵀ.
	out := make([]float64, d1*d2)
	for i := 0; i < d1; i++ {
		oi := out[i*d2 : (i+1)*d2]
		for k := 0; k < r; k++ {
			c := av[i*r+k]
			for l := 0; l < r; l++ {
				c -= u[i*r+l] * utav[l*r+k]
			}
			floats.AddScaled(oi, u[i*r+k], uta[k*d2:(k+1)*d2])
			floats.AddScaled(oi, c, vt[k*d2:(k+1)*d2])
		}
	}
	return out
}

// sweep sets uta = Uᵀa (r×d2) and av = aV (d1×r) in one sweep over the
// rows of a.
func (t Tangent) sweep(a, uta, av []float64) {
	d2, r := t.D2, t.R
	for j := range uta {
		uta[j] = 0
	}
	for i := 0; i < t.D1; i++ {
		ai := a[i*d2 : (i+1)*d2]
		for k := 0; k < r; k++ {
			floats.AddScaled(uta[k*d2:(k+1)*d2], t.U[i*r+k], ai)
			av[i*r+k] = floats.Dot(ai, t.Vt[k*d2:(k+1)*d2])
		}
	}
}

// ProjectedNorm returns ‖P_T(x)‖_F from ‖P_T x‖² = ‖Uᵀx‖² + ‖xV‖² −
// ‖UᵀxV‖² for the row-major d1×d2 x; scratch holds at least r·(d1+d2)
// values (nil: allocated).
func (t Tangent) ProjectedNorm(x, scratch []float64) float64 {
	d1, d2, r := t.D1, t.D2, t.R
	if len(scratch) < r*(d1+d2) {
		scratch = make([]float64, r*(d1+d2))
	}
	utx, xv := scratch[:r*d2], scratch[r*d2:r*(d1+d2)]
	t.sweep(x, utx, xv)
	n2 := floats.Dot(utx, utx) + floats.Dot(xv, xv)
	for k := 0; k < r; k++ {
		for l := 0; l < r; l++ {
			var c float64
			for i := 0; i < d1; i++ {
				c += t.U[i*r+k] * xv[i*r+l]
			}
			n2 -= c * c
		}
	}
	return math.Sqrt(math.Max(n2, 0))
}

// ProjectedWeight returns the weight w = res·min(1, τ/(|res|·‖P_T(x)‖_F))
// by which sample x with residual res enters ProjectedGradient, and
// whether the clip was active: the projected term w·P_T(x) has Frobenius
// norm ≤ τ. scratch is as for ProjectedNorm.
func (t Tangent) ProjectedWeight(x []float64, res, tau float64, scratch []float64) (float64, bool) {
	if g := math.Abs(res) * t.ProjectedNorm(x, scratch); g > tau {
		return res * tau / g, true
	}
	return res, false
}

// ProjectedGradient adds Σ_i w_i x_i over the block to sum, with res_i =
// <x_i, m> − y_i and w_i = ProjectedWeight(x_i, res_i, τ): every projected
// term w_i·P_T(X_i) has Frobenius norm ≤ τ (ProjectedGradientSensitivity).
// It returns the loss Σ_i res_i² and the number of clipped samples.
func ProjectedGradient(sum, x []float64, stride int, y, m []float64, t Tangent, tau float64) (float64, int) {
	p := len(sum)
	scratch := make([]float64, t.R*(t.D1+t.D2))
	var loss float64
	clipped := 0
	for i, yi := range y {
		xi := x[i*stride : i*stride+p]
		res := Residual(xi, m, yi)
		loss += res * res
		w, c := t.ProjectedWeight(xi, res, tau, scratch)
		if c {
			clipped++
		}
		floats.AddScaled(sum, w, xi)
	}
	return loss, clipped
}

// ProjectedGradientSensitivity is the replace-one sensitivity 2τ of
// P_T(sum) for a ProjectedGradient sum (each projected term has norm ≤ τ).
func ProjectedGradientSensitivity(tau float64) float64 { return 2 * tau }

// CheckProjectedGradient checks the bound a ProjectedGradient sum over n
// samples satisfies: ‖P_T(sum)‖ ≤ n·τ (up to BoundSlack).
func CheckProjectedGradient(sum []float64, n int64, t Tangent, tau float64) error {
	if Norm(t.Project(sum)) > float64(n)*tau*BoundSlack {
		return fmt.Errorf("the tangent projection of the sum has norm above n·τ: the per-sample projected gradients were not clipped to τ = %g", tau)
	}
	return nil
}

// ResponseCounts adds to counts (len(grid)+1 of them) the number of
// responses |y_i| of the block in each cell of the increasing grid (Cell).
// Replacing one sample moves one unit between two cells: what a private
// quantile of the responses' scale reads (CheckNormCounts checks a result).
func ResponseCounts(counts, y, grid []float64) {
	for _, v := range y {
		counts[Cell(grid, math.Abs(v))]++
	}
}
