package gen

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/sdk"
)

// TraceModelName is the registered name of the low-rank trace-regression
// model.
const TraceModelName = "trace-regression"

func init() {
	Register(model{name: TraceModelName,
		summary: "low-rank trace regression y_i = <X_i, M> + noise with a Gaussian design (data kind trace)",
		params: []sdk.ParamSpec{
			{Name: "n", Type: sdk.Int, Default: "16000", Min: sdk.Bound(1), Doc: "number of samples"},
			{Name: "d1", Type: sdk.Int, Default: "30", Min: sdk.Bound(1), Doc: "rows of each sample matrix X_i and of M"},
			{Name: "d2", Type: sdk.Int, Default: "20", Min: sdk.Bound(1), Doc: "columns of each sample matrix X_i and of M"},
			{Name: "rank", Type: sdk.Int, Default: "2", Min: sdk.Bound(1), Doc: "rank r of M (at most min(d1, d2))"},
			{Name: "sigma1", Type: sdk.Float, Default: "2", Min: sdk.Bound(0), Doc: "largest singular value σ1 of M"},
			{Name: "sigmar", Type: sdk.Float, Default: "1", Min: sdk.Bound(0), Doc: "smallest non-zero singular value σr of M (σ1 ≥ σr > 0); the others are spaced linearly between"},
			{Name: "sigma_xi", Type: sdk.Float, Default: "0.5", Min: sdk.Bound(0), Doc: "standard deviation σ_ξ of the response noise"},
			{Name: "design_rho", Type: sdk.Float, Default: "0", Min: sdk.Bound(-0.95), Max: sdk.Bound(0.95),
				Doc: "AR(1) correlation of the design over the row-major flattened coordinates (0: i.i.d. N(0,1) entries, Λ = I)"},
		},
		generate: generateTrace})
}

// generateTrace draws low-rank trace-regression data: y_i = <X_i, M> + ξ_i with
// M = U Σ Vᵀ of rank r (U, V Haar-distributed, Σ = diag(σ1 … σr) spaced
// linearly from σ1 down to σr), vec(X_i) ~ N(0, Λ) and ξ_i ~ N(0, σ_ξ²).
// Λ is the identity, or an AR(1) correlation ρ^|j−k| over the row-major
// flattened coordinates when design_rho ≠ 0.
func generateTrace(p sdk.Params, rng *rand.Rand) (*Generated, error) {
	n, d1, d2, r := p.Int("n"), p.Int("d1"), p.Int("d2"), p.Int("rank")
	s1, sr, sxi, rho := p.Float("sigma1"), p.Float("sigmar"), p.Float("sigma_xi"), p.Float("design_rho")
	if r > min(d1, d2) {
		return nil, fmt.Errorf("rank %d exceeds min(d1, d2) = %d", r, min(d1, d2))
	}
	if !(sr > 0) || s1 < sr {
		return nil, fmt.Errorf("need σ1 ≥ σr > 0, got σ1 = %v, σr = %v", s1, sr)
	}
	pdim := d1 * d2
	if float64(n)*float64(pdim) > 4e9 {
		return nil, fmt.Errorf("n·d1·d2 = %.3g doubles is too large to generate in memory", float64(n)*float64(pdim))
	}
	u := haar(d1, r, rng, true)
	v := haar(d2, r, rng, true)
	sig := make([]float64, r)
	for k := range sig {
		if r == 1 {
			sig[k] = s1
		} else {
			sig[k] = s1 - (s1-sr)*float64(k)/float64(r-1)
		}
	}
	sigma := mat.NewDiagDense(r, sig)
	var us, m mat.Dense
	us.Mul(u, sigma)
	m.Mul(&us, v.T())
	mvec := m.RawMatrix().Data // d1×d2 row-major, stride d2

	x := make([]float64, n*pdim)
	y := make([]float64, n)
	c := math.Sqrt(1 - rho*rho)
	for i := 0; i < n; i++ {
		row := x[i*pdim : (i+1)*pdim]
		prev := 0.0
		for j := range row {
			z := rng.NormFloat64()
			if j == 0 || rho == 0 {
				prev = z
			} else {
				prev = rho*prev + c*z
			}
			row[j] = prev
		}
		var dot float64
		for j, xv := range row {
			dot += xv * mvec[j]
		}
		y[i] = dot + sxi*rng.NormFloat64()
	}
	ds := &data.Dataset{Kind: data.Trace, X: mat.NewDense(n, pdim, x), Y: y, D1: d1, D2: d2,
		Name: fmt.Sprintf("trace-regression n=%d d1=%d d2=%d r=%d", n, d1, d2, r)}
	return &Generated{
		Data:  ds,
		Truth: map[string]*mat.Dense{"M": &m, "U": u, "V": v, "Sigma": mat.DenseCopyOf(sigma)},
		Scalars: map[string]float64{
			"n": float64(n), "d1": float64(d1), "d2": float64(d2), "rank": float64(r),
			"sigma1": s1, "sigmar": sr, "sigma_xi": sxi, "design_rho": rho,
			"kappa": s1 / sr, "norm_M_F": mat.Norm(&m, 2),
		},
	}, nil
}
