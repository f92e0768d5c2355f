// Package rowsrc is where the rows estimators of the pca and orbit plugins
// get their aggregates from: the rows in memory (Local) or aggregation
// passes over a data set held elsewhere (Remote: shards a Beam pipeline
// reads, reached through data.Remote's Passer). Both give the same
// aggregates up to floating-point summation order — the counts of the row
// norms on the public quantile grid exactly, the clipped sum and the
// clipped second moment to rounding — so that an estimator written once
// against Source releases the same values with the same privacy steps on
// either.
//
// Nothing a Source returns is private: the estimator adds the noise.
package rowsrc

import (
	"context"
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/plugins/internal/clip"
	"github.com/dplr/dplr/plugins/internal/gram"
	"github.com/dplr/dplr/plugins/internal/quantile"
)

// Source gives a rows estimator the aggregates of its rows.
type Source interface {
	// Dims returns the public shape n×p.
	Dims() (n, p int)
	// Rows returns the rows when they are in memory, nil otherwise.
	Rows() *mat.Dense
	// Finite reports a non-finite entry (always nil for a remote source,
	// whose reader refuses them and whose passes fail on them).
	Finite() error
	// NormCounts returns the counts of the norms ‖x_i − μ‖ (μ nil: 0) in
	// the cells of the increasing grid (quantile.Counts): len(grid)+1
	// counts summing to n. It fails on a row whose norm is not finite.
	NormCounts(ctx context.Context, grid, mu []float64) ([]int64, error)
	// Sum returns Σ_i min(1, c/‖x_i‖)·x_i, c > 0.
	Sum(ctx context.Context, c float64) ([]float64, error)
	// SecondMoment returns scale·Σ_i w_i²(x_i−μ)(x_i−μ)ᵀ with
	// w_i = min(1, c/‖x_i−μ‖) (c ≤ 0 or +Inf: no clipping; mu nil: μ = 0)
	// and the number of rows the clip shrank (evaluation only).
	SecondMoment(ctx context.Context, be backend.Backend, mu []float64, c, scale float64) (*mat.SymDense, int, error)
}

// Of returns the source of a rows data set: its rows, or its Passer when
// it is held elsewhere.
func Of(d *data.Dataset) (Source, error) {
	switch {
	case d == nil:
		return nil, errors.New("empty data set")
	case d.Kind != data.Rows:
		return nil, fmt.Errorf("need rows data, got %s", d.Kind)
	case d.X != nil && !d.X.IsEmpty():
		return Local(d.X), nil
	case d.Remote != nil:
		if d.Remote.Passer == nil || d.Remote.N < 1 || d.Remote.P < 1 {
			return nil, errors.New("remote data set without rows or pass runner")
		}
		return Remote(d.Remote), nil
	}
	return nil, errors.New("empty data set")
}

// PrivateNorm releases the q-quantile of the norms ‖x_i − μ‖ of src's rows
// with the exponential mechanism on the default public grid (one declared
// step at budget b; plugins/pca/DERIVATIONS.md §6): clip.PrivateNorm on any
// source. An input error (a non-finite row) is returned before the step.
func PrivateNorm(ctx context.Context, acct *privacy.Accountant, rnd *privacy.Source, name string, b privacy.Budget, src Source, mu []float64, q float64) (float64, error) {
	if x := src.Rows(); x != nil {
		return clip.PrivateNorm(ctx, acct, rnd, name, b, x, mu, q)
	}
	grid, err := clip.DefaultGrid()
	if err != nil {
		return 0, err
	}
	counts, err := src.NormCounts(ctx, grid, mu)
	if err != nil {
		return 0, err
	}
	return clip.PrivateNormCounts(acct, rnd, name, b, counts, q)
}

// local is a Source over rows in memory.
type local struct{ x *mat.Dense }

// Local returns the source of the in-memory rows x (never written).
func Local(x *mat.Dense) Source { return local{x} }

func (l local) Dims() (int, int) { return l.x.Dims() }
func (l local) Rows() *mat.Dense { return l.x }
func (l local) Finite() error    { return clip.Finite(l.x) }
func (l local) Sum(ctx context.Context, c float64) ([]float64, error) {
	return clip.Sum(ctx, l.x, c)
}

func (l local) NormCounts(ctx context.Context, grid, mu []float64) ([]int64, error) {
	norms, err := clip.Norms(ctx, l.x, mu)
	if err != nil {
		return nil, err
	}
	for i, v := range norms {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			if err := clip.Finite(l.x); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("data row %d: its norm overflows float64 (entries near 1e154 or larger)", i)
		}
	}
	return quantile.Counts(norms, grid), nil
}

func (l local) SecondMoment(ctx context.Context, be backend.Backend, mu []float64, c, scale float64) (*mat.SymDense, int, error) {
	return gram.SecondMoment(ctx, be, l.x, mu, c, scale)
}

// remote is a Source reached through aggregation passes.
type remote struct{ r *data.Remote }

// Remote returns the source of a data set held elsewhere: every aggregate
// is one pass of its Passer (kinds pass.RowsNormHistogram,
// pass.RowsClippedSum, pass.RowsCentredMoment), whose result is checked
// against the kind's bounds before use.
func Remote(r *data.Remote) Source { return remote{r} }

func (s remote) Dims() (int, int) { return s.r.N, s.r.P }
func (s remote) Rows() *mat.Dense { return nil }
func (s remote) Finite() error    { return nil }

// run runs one pass and checks its result as the host does.
func (s remote) run(ctx context.Context, req data.PassRequest) (*data.PassResult, error) {
	spec, err := pass.Validate(data.Rows, s.r, req)
	if err != nil {
		return nil, err
	}
	res, err := s.r.Passer.Pass(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("pass %s: %w", req.Kind, err)
	}
	if err := pass.CheckResult(spec, s.r, req, res); err != nil {
		return nil, err
	}
	return res, nil
}

// center returns mu, or zeros, as the pass input "center".
func (s remote) center(mu []float64) data.Array {
	c := make([]float64, s.r.P)
	copy(c, mu)
	return data.Array{Name: "center", Rows: 1, Cols: s.r.P, Data: c}
}

func (s remote) NormCounts(ctx context.Context, grid, mu []float64) ([]int64, error) {
	res, err := s.run(ctx, data.PassRequest{Kind: pass.RowsNormHistogram,
		Params: map[string]float64{"cells": float64(len(grid))},
		Inputs: []data.Array{{Name: "grid", Rows: 1, Cols: len(grid), Data: append([]float64(nil), grid...)}, s.center(mu)}})
	if err != nil {
		return nil, err
	}
	out, _ := res.Output("counts")
	counts := make([]int64, len(out.Data))
	for k, v := range out.Data {
		counts[k] = int64(v) // integers, checked by pass.CheckResult
	}
	return counts, nil
}

func (s remote) Sum(ctx context.Context, c float64) ([]float64, error) {
	res, err := s.run(ctx, data.PassRequest{Kind: pass.RowsClippedSum, Params: map[string]float64{"clip": c}})
	if err != nil {
		return nil, err
	}
	out, _ := res.Output("sum")
	return out.Data, nil
}

func (s remote) SecondMoment(ctx context.Context, _ backend.Backend, mu []float64, c, scale float64) (*mat.SymDense, int, error) {
	if !(c > 0) || math.IsInf(c, 1) {
		c = 0
	}
	res, err := s.run(ctx, data.PassRequest{Kind: pass.RowsCentredMoment,
		Params: map[string]float64{"clip": c}, Inputs: []data.Array{s.center(mu)}})
	if err != nil {
		return nil, 0, err
	}
	out, _ := res.Output("moment")
	p := s.r.P
	m := mat.NewSymDense(p, nil)
	for a := 0; a < p; a++ {
		for b := a; b < p; b++ {
			m.SetSym(a, b, scale*out.Data[a*p+b])
		}
	}
	return m, int(res.Scalars["clipped"]), nil
}

// Kinds returns the pass kinds a fit that reads the given aggregates
// requests on a remote source: the norm histogram (a private norm
// quantile), the clipped sum (a private mean) and, always, the clipped
// second moment.
func Kinds(quantiles, sum bool) []string {
	out := []string{pass.RowsCentredMoment}
	if quantiles {
		out = append(out, pass.RowsNormHistogram)
	}
	if sum {
		out = append(out, pass.RowsClippedSum)
	}
	return out
}

// Moments returns the unclipped mean Σ_i x_i/n and second moment
// Σ_i x_i x_iᵀ/n of a remote data set's rows: one pass of kind
// pass.RowsMoment with clip 0, checked against the kind's bounds. It is
// what the evaluation figures (evaluate=true, never private) read.
func Moments(ctx context.Context, r *data.Remote) ([]float64, *mat.SymDense, error) {
	s := remote{r}
	res, err := s.run(ctx, data.PassRequest{Kind: pass.RowsMoment, Params: map[string]float64{"clip": 0}})
	if err != nil {
		return nil, nil, err
	}
	sum, _ := res.Output("sum")
	mom, _ := res.Output("moment")
	n := float64(res.Records)
	mean := make([]float64, r.P)
	for j, v := range sum.Data {
		mean[j] = v / n
	}
	m := mat.NewSymDense(r.P, nil)
	for a := 0; a < r.P; a++ {
		for b := a; b < r.P; b++ {
			m.SetSym(a, b, mom.Data[a*r.P+b]/n)
		}
	}
	return mean, m, nil
}
