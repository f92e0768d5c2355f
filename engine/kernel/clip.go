// Package kernel holds every per-record and per-user aggregation kernel of
// dplr, once: the clipping, the clipped sums and second moments, the norm
// histograms, the per-user solves and the projected gradients that the
// estimators' aggregation passes compute. Each kernel states the bound
// its output satisfies (its sensitivity), and the check a host applies to
// a result claiming to come from it.
//
// Three callers share these functions: the estimator plugins (through the
// in-process pass runner, for a data set in a file), the reference pass
// runner in package pass, and the Beam pipelines (for shards). Nothing
// here adds noise: a kernel's output is an exact, bounded aggregate, and
// the estimator that asked for it privatises it.
//
// The package imports only the data types and gonum.
package kernel

import "math"

// CountSlack is the relative slack under which a record whose squared
// norm exceeds clip² by rounding alone is not counted as shrunk: a record
// counts as clipped when ‖x‖² > clip²·CountSlack. The count is reported
// for evaluation only; the clipping itself is exact.
const CountSlack = 1 + 2e-9

// Norm returns the Euclidean (Frobenius) norm of v, summed in index order.
func Norm(v []float64) float64 { return math.Sqrt(sqNorm(v, nil)) }

// sqNorm is ‖x − c‖² = Σ_j (x_j − c_j)² summed in column order (c nil:
// ‖x‖²): its square root is the norm every implementation of a norm
// histogram must compute, so that a norm on a grid point falls in the same
// cell everywhere.
func sqNorm(x, c []float64) float64 {
	var s float64
	if c == nil {
		for _, v := range x {
			s += v * v
		}
		return s
	}
	c = c[:len(x)]
	for j, v := range x {
		v -= c[j]
		s += v * v
	}
	return s
}

// sqNorms sets s[k] = sqNorm(rows[k], c) for rows of equal length, bit for
// bit (c must not be nil: zeros stand for none, as v − 0 = v), four rows
// at a time: each row keeps its own sum in column order, and the four
// independent sums keep the processor's adders busy where one sum waits on
// each addition.
func sqNorms(s []float64, rows [][]float64, c []float64) {
	k := 0
	for ; k+4 <= len(rows); k += 4 {
		a := rows[k]
		b, d, e, cc := rows[k+1][:len(a)], rows[k+2][:len(a)], rows[k+3][:len(a)], c[:len(a)]
		var s0, s1, s2, s3 float64
		for j, v := range a {
			m := cc[j]
			v, w, y, z := v-m, b[j]-m, d[j]-m, e[j]-m
			s0 += v * v
			s1 += w * w
			s2 += y * y
			s3 += z * z
		}
		s[k], s[k+1], s[k+2], s[k+3] = s0, s1, s2, s3
	}
	for ; k < len(rows); k++ {
		s[k] = sqNorm(rows[k], c)
	}
}

// ClipFactor returns min(1, clip/‖x‖) for clip > 0 and finite, and 1
// otherwise (no clipping): the weight of x in a clipped sum.
func ClipFactor(x []float64, clip float64) float64 { return clipFactor(sqNorm(x, nil), clip) }

// clipFactor is ClipFactor of a row of squared norm s.
func clipFactor(s, clip float64) float64 {
	if clip > 0 && !math.IsInf(clip, 1) && s > clip*clip {
		return clip / math.Sqrt(s)
	}
	return 1
}

// shrink scales the row x of squared norm s in place to norm clip when it
// is longer (clip ≤ 0 or +Inf: unchanged), and reports whether it was
// longer by more than rounding (CountSlack).
func shrink(x []float64, s, clip float64) bool {
	f := clipFactor(s, clip)
	if f == 1 {
		return false
	}
	for j := range x {
		x[j] *= f
	}
	return s > clip*clip*CountSlack
}
