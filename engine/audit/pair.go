package audit

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"github.com/dplr/dplr/engine/data"
)

// Neighbours returns two data sets that differ in one record under the
// replace-one relation of ds's kind, the record set to ∓canary along the
// direction the data vary least (rows), as the response (trace), or as
// every response of user 0 (users), so that the estimator's output moves as
// far as its sensitivity allows (docs/privacy.md, "Inside engine/audit").
// The input is not modified.
func Neighbours(ds *data.Dataset, canary float64) (a, b *data.Dataset, err error) {
	if ds == nil || ds.X == nil || ds.X.IsEmpty() {
		return nil, nil, errors.New("audit: the data set has no rows")
	}
	if !(canary > 0) || math.IsInf(canary, 0) {
		return nil, nil, fmt.Errorf("audit: canary size %v must be positive and finite", canary)
	}
	a, b = clone(ds), clone(ds)
	switch ds.Kind {
	case data.Rows:
		e := leastVaryingAxis(ds.X)
		ra, rb := a.X.RawRowView(0), b.X.RawRowView(0)
		for j := range ra {
			ra[j], rb[j] = 0, 0
		}
		ra[e], rb[e] = -canary, canary
	case data.Trace:
		if len(ds.Y) == 0 {
			return nil, nil, errors.New("audit: trace data without responses")
		}
		a.Y[0], b.Y[0] = -canary, canary
	case data.Users:
		if ds.NumUsers() < 2 {
			return nil, nil, errors.New("audit: users data needs at least two users")
		}
		for i := ds.UserStart[0]; i < ds.UserStart[1]; i++ {
			a.Y[i], b.Y[i] = -canary, canary
		}
	default:
		return nil, nil, fmt.Errorf("audit: data of kind %q has no neighbour relation here", ds.Kind)
	}
	a.Hash, b.Hash = "", ""
	return a, b, nil
}

func clone(ds *data.Dataset) *data.Dataset {
	c := *ds
	c.X = mat.DenseCopyOf(ds.X)
	c.Y = append([]float64(nil), ds.Y...)
	c.UserStart = append([]int(nil), ds.UserStart...)
	c.UserIDs = append([]int64(nil), ds.UserIDs...)
	c.Labels = append([]int(nil), ds.Labels...)
	return &c
}

// leastVaryingAxis is the column of x with the smallest variance.
func leastVaryingAxis(x *mat.Dense) int {
	n, p := x.Dims()
	best, bestVar := 0, math.Inf(1)
	col := make([]float64, n)
	for j := 0; j < p; j++ {
		mat.Col(col, j, x)
		if v := stat.Variance(col, nil); v < bestVar {
			best, bestVar = j, v
		}
	}
	return best
}

// Project reduces flattened outputs to the scalar statistic the audit
// tests: each output's coordinate along the direction in which the mean
// outputs of the two data sets differ, the direction estimated on a
// separate set of runs (dirA, dirB) so that the statistic of the audited
// runs (a, b) is a fixed function of each run.
func Project(dirA, dirB, a, b [][]float64) (sa, sb []float64, err error) {
	if len(dirA) == 0 || len(dirB) == 0 {
		return nil, nil, errors.New("audit: no runs to estimate the direction from")
	}
	ma, mb := meanOf(dirA), meanOf(dirB)
	if ma == nil || mb == nil || len(ma) != len(mb) {
		return nil, nil, errors.New("audit: outputs of different lengths")
	}
	u := make([]float64, len(ma))
	var norm float64
	for i := range u {
		u[i] = mb[i] - ma[i]
		norm += u[i] * u[i]
	}
	if !(norm > 0) {
		return nil, nil, errors.New("audit: the two data sets give the same mean output: the canary does not move this estimator")
	}
	norm = math.Sqrt(norm)
	proj := func(xs [][]float64) ([]float64, error) {
		out := make([]float64, len(xs))
		for k, x := range xs {
			if len(x) != len(u) {
				return nil, errors.New("audit: outputs of different lengths")
			}
			var s float64
			for i, v := range x {
				s += (v - ma[i]) * u[i]
			}
			out[k] = s / norm
		}
		return out, nil
	}
	if sa, err = proj(a); err != nil {
		return nil, nil, err
	}
	sb, err = proj(b)
	return sa, sb, err
}

func meanOf(xs [][]float64) []float64 {
	n := len(xs[0])
	m := make([]float64, n)
	for _, x := range xs {
		if len(x) != n {
			return nil
		}
		for i, v := range x {
			m[i] += v
		}
	}
	for i := range m {
		m[i] /= float64(len(xs))
	}
	return m
}

// Flatten turns an output matrix into the vector the audit compares. A
// matrix with orthonormal columns (a subspace basis, defined only up to
// rotation and sign) is replaced by its projector UUᵀ, which is not.
func Flatten(m *mat.Dense) []float64 {
	r, c := m.Dims()
	if c < r && orthonormal(m) {
		var p mat.Dense
		p.Mul(m, m.T())
		return append([]float64(nil), p.RawMatrix().Data...)
	}
	out := make([]float64, 0, r*c)
	for i := 0; i < r; i++ {
		out = append(out, m.RawRowView(i)...)
	}
	return out
}

func orthonormal(m *mat.Dense) bool {
	var g mat.Dense
	g.Mul(m.T(), m)
	c, _ := g.Dims()
	for i := 0; i < c; i++ {
		for j := 0; j < c; j++ {
			want := 0.0
			if i == j {
				want = 1
			}
			if math.Abs(g.At(i, j)-want) > 1e-6 {
				return false
			}
		}
	}
	return true
}
