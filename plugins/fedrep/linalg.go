package fedrep

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
)

// orthonormalize returns Q of the thin QR of a (d×k, d ≥ k) through the
// backend; if R is numerically singular it falls back to the polar factor
// of the thin SVD (DERIVATIONS.md §11), which also spans the best rank-k subspace.
func orthonormalize(be backend.Backend, a *mat.Dense) (*mat.Dense, error) {
	d, k := a.Dims()
	for _, v := range a.RawMatrix().Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("re-orthonormalization: iterate is not finite (step size or noise too large)")
		}
	}
	q, r, err := be.QR(a)
	if err == nil {
		maxd, mind := 0.0, math.Inf(1)
		for i := 0; i < k; i++ {
			x := math.Abs(r.At(i, i))
			maxd, mind = math.Max(maxd, x), math.Min(mind, x)
		}
		if maxd > 0 && mind > 1e-10*maxd {
			return q, nil
		}
	}
	u, _, v, err := be.SVD(a)
	if err != nil {
		return nil, fmt.Errorf("re-orthonormalization: %w", err)
	}
	out := mat.NewDense(d, k, nil)
	out.Mul(u, v.T())
	return out, nil
}
