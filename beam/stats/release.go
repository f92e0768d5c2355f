package stats

import "gonum.org/v1/gonum/mat"

// SecondMoment returns Σ̂ = Σ w_i² x_i x_iᵀ / N, the clipped second moment
// the pca estimators' from-statistics entry points take.
func (s *RowStats) SecondMoment() *mat.SymDense {
	p := s.P
	out := mat.NewSymDense(p, nil)
	inv := 1 / float64(s.N)
	for i := 0; i < p; i++ {
		for j := i; j < p; j++ {
			out.SetSym(i, j, s.Moment[i*p+j]*inv)
		}
	}
	return out
}
