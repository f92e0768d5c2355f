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
func Norm(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// CentredNorm returns ‖x − c‖, summed in column order (c nil: ‖x‖): the
// norm every implementation of a norm histogram must compute, so that a
// norm on a grid point falls in the same cell everywhere.
func CentredNorm(x, c []float64) float64 {
	if c == nil {
		return Norm(x)
	}
	var s float64
	for j, v := range x {
		v -= c[j]
		s += v * v
	}
	return math.Sqrt(s)
}

// ClipFactor returns min(1, clip/‖x‖) for clip > 0 and finite, and 1
// otherwise (no clipping): the weight of x in a clipped sum.
func ClipFactor(x []float64, clip float64) float64 {
	if !(clip > 0) || math.IsInf(clip, 1) {
		return 1
	}
	var s float64
	for _, v := range x {
		s += v * v
	}
	if s > clip*clip {
		return clip / math.Sqrt(s)
	}
	return 1
}

// Shrink scales x in place to norm clip when it is longer (clip ≤ 0 or
// +Inf: unchanged), and reports whether it was longer by more than
// rounding (CountSlack).
func Shrink(x []float64, clip float64) bool {
	if !(clip > 0) || math.IsInf(clip, 1) {
		return false
	}
	var s float64
	for _, v := range x {
		s += v * v
	}
	if s <= clip*clip {
		return false
	}
	f := clip / math.Sqrt(s)
	for j := range x {
		x[j] *= f
	}
	return s > clip*clip*CountSlack
}
