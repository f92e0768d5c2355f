package fedrep

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// PopulationMSE is the closed-form population mean squared error of the
// personalized linear model for isotropic features (DERIVATIONS.md §1):
// (1/n) Σ_i ‖U v_i − U* v_i*‖² + R², where R is the label-noise standard
// deviation. u is d×k, v is n×k; uStar is d×k*, vStar n×k*.
func PopulationMSE(u, v, uStar, vStar *mat.Dense, noise float64) (float64, error) {
	n, _ := v.Dims()
	ns, _ := vStar.Dims()
	if n != ns {
		return 0, fmt.Errorf("population MSE: %d heads against %d true heads", n, ns)
	}
	var w, ws mat.Dense
	w.Mul(u, v.T())
	ws.Mul(uStar, vStar.T())
	w.Sub(&w, &ws)
	f := mat.Norm(&w, 2)
	return f*f/float64(n) + noise*noise, nil
}
