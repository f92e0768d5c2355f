package backend

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

// canonicalSigns fixes the sign of each column of vecs (an eigenvector is
// defined up to sign): the entry of largest magnitude, the first of them
// on a tie, is made positive. The top-k eigensolvers apply it so that two
// paths computing the same matrix to rounding (one machine, or a pipeline
// summing shards in another order) release the same vectors, not the same
// subspace with flipped columns. It is a deterministic function of the
// vectors, so it is post-processing of whatever they were computed from.
func canonicalSigns(vecs *mat.Dense) {
	if vecs == nil {
		return
	}
	r, c := vecs.Dims()
	for j := 0; j < c; j++ {
		best, at := -1.0, 0
		for i := 0; i < r; i++ {
			// Entries equal to within rounding count as ties, so the
			// choice does not flip on rounding-level differences.
			if v := math.Abs(vecs.At(i, j)); v > best*(1+1e-9) {
				best, at = v, i
			}
		}
		if vecs.At(at, j) < 0 {
			for i := 0; i < r; i++ {
				vecs.Set(i, j, -vecs.At(i, j))
			}
		}
	}
}
