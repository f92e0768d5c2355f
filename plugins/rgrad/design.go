package rgrad

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/sdk"
)

// Design is the known covariance Λ of vec(X_i) (the same for every sample),
// as the estimators need it: Λ⁻¹ applied to a vector, and the eigenvalue
// bounds C_l ≤ λ(Λ) ≤ C_u that enter the sensitivities.
type Design struct {
	// Kind is "identity", "ar1" or "file".
	Kind string
	// Rho is the AR(1) correlation (Kind "ar1").
	Rho float64
	// Lambda is the full covariance (Kind "file").
	Lambda *mat.SymDense
	// Cl and Cu bound the eigenvalues of Λ.
	Cl, Cu float64

	be backend.Backend
}

// Identity is the isotropic design Λ = I.
func Identity() Design { return Design{Kind: "identity", Cl: 1, Cu: 1} }

// ParseDesign reads the design parameter: "identity", "ar1:RHO" (Λ_jk =
// RHO^|j−k| over the row-major flattened coordinates, |RHO| < 1) or
// "file:PATH" (a p×p symmetric positive-definite matrix as whitespace- or
// comma-separated text, p = d1·d2).
func ParseDesign(spec string, p int, be backend.Backend) (Design, error) {
	switch {
	case spec == "" || spec == "identity":
		return Identity(), nil
	case strings.HasPrefix(spec, "ar1:"):
		rho, err := strconv.ParseFloat(strings.TrimPrefix(spec, "ar1:"), 64)
		if err != nil || math.IsNaN(rho) || !(math.Abs(rho) < 1) {
			return Design{}, sdk.BadRequest("design %q: the AR(1) correlation must be a number in (−1, 1)", spec)
		}
		a := math.Abs(rho)
		return Design{Kind: "ar1", Rho: rho, Cl: (1 - a) / (1 + a), Cu: (1 + a) / (1 - a)}, nil
	case strings.HasPrefix(spec, "file:"):
		path := strings.TrimPrefix(spec, "file:")
		lam, err := readSymmetric(path, p)
		if err != nil {
			return Design{}, fmt.Errorf("design %q: %w", spec, err)
		}
		vals, _, err := be.EigSym(lam)
		if err != nil {
			return Design{}, fmt.Errorf("design %q: eigenvalues: %w", spec, err)
		}
		if !(vals[p-1] > 0) {
			return Design{}, fmt.Errorf("design %q: covariance is not positive definite (smallest eigenvalue %v)", spec, vals[p-1])
		}
		return Design{Kind: "file", Lambda: lam, Cl: vals[p-1], Cu: vals[0], be: be}, nil
	}
	return Design{}, sdk.BadRequest("design %q: want identity, ar1:RHO or file:PATH", spec)
}

// String describes the design.
func (d Design) String() string {
	switch d.Kind {
	case "ar1":
		return fmt.Sprintf("AR(1) design covariance with correlation %g", d.Rho)
	case "file":
		n := d.Lambda.SymmetricDim()
		return fmt.Sprintf("known %d×%d design covariance (eigenvalues in [%.4g, %.4g])", n, n, d.Cl, d.Cu)
	}
	return "isotropic design (Λ = I)"
}

// ApplyInv overwrites x (length p) with Λ⁻¹x.
func (d Design) ApplyInv(x []float64) error {
	switch d.Kind {
	case "identity", "":
		return nil
	case "ar1":
		// Λ⁻¹ is tridiagonal: (1/(1−ρ²))·[1+ρ² on the interior diagonal, 1 at
		// both ends, −ρ off the diagonal].
		rho := d.Rho
		p := len(x)
		if p == 1 {
			return nil
		}
		out := make([]float64, p)
		c := 1 / (1 - rho*rho)
		for j := 0; j < p; j++ {
			diag := 1 + rho*rho
			if j == 0 || j == p-1 {
				diag = 1
			}
			v := diag * x[j]
			if j > 0 {
				v -= rho * x[j-1]
			}
			if j < p-1 {
				v -= rho * x[j+1]
			}
			out[j] = c * v
		}
		copy(x, out)
		return nil
	case "file":
		sol, err := d.be.SPDSolve(d.Lambda, mat.NewDense(len(x), 1, append([]float64(nil), x...)))
		if err != nil {
			return fmt.Errorf("applying Λ⁻¹: %w", err)
		}
		for i := range x {
			x[i] = sol.At(i, 0)
		}
		return nil
	}
	return fmt.Errorf("unknown design kind %q", d.Kind)
}

func readSymmetric(path string, p int) (*mat.SymDense, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening covariance file: %w", err)
	}
	defer f.Close()
	vals := make([]float64, 0, p*p)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<28)
	for sc.Scan() {
		for _, tok := range strings.FieldsFunc(sc.Text(), func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
			v, err := strconv.ParseFloat(tok, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("covariance file: %q is not a finite number", tok)
			}
			vals = append(vals, v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading covariance file: %w", err)
	}
	if len(vals) != p*p {
		return nil, fmt.Errorf("covariance file holds %d numbers, want %d×%d = %d", len(vals), p, p, p*p)
	}
	for i := 0; i < p; i++ {
		for j := 0; j < i; j++ {
			a, b := vals[i*p+j], vals[j*p+i]
			if math.Abs(a-b) > 1e-10*math.Max(1, math.Abs(a)) {
				return nil, fmt.Errorf("covariance file: entry (%d,%d) = %v differs from (%d,%d) = %v", i, j, a, j, i, b)
			}
		}
	}
	return mat.NewSymDense(p, vals), nil
}
