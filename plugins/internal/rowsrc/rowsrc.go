// Package rowsrc is where the rows estimators of the pca and orbit plugins
// get their aggregates from: the rows passes of package engine/pass (the
// norm counts on the public quantile grid, the clipped sum, the clipped
// second moment), run in process over a data set in memory (pass.Local,
// the kernels of engine/kernel) or by the data set's Passer when it is
// held elsewhere (shards a Beam pipeline reads). An estimator written
// against Source has one path, and releases the same values with the same
// privacy steps on either.
//
// Over rows in memory a Source runs the kernels itself, with the requests
// checked as a pass's, and keeps the squared row norms of its last norm
// quantile: the clipped sum or second moment that follows about the same
// centre reads them instead of computing them again (the same bits).
//
// Nothing a Source returns is private: the estimator adds the noise.
package rowsrc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/plugins/internal/clip"
)

// Source gives a rows estimator the aggregates of its rows, each one
// checked pass (pass.Run) or, over rows in memory, one kernel run.
type Source struct {
	ds   *data.Dataset
	n, p int
	rows kernel.Matrix // the rows in memory (nil: remote)

	mu     sync.Mutex
	center []float64 // the centre of sq (pass.CenterOf: nil for 0)
	sq     []float64 // the rows' squared norms about center (nil: none kept)
}

// Of returns the source of a rows data set: passes run in process over
// its rows (float64, or bytes decoded block by block), or by its Passer
// when it is held elsewhere.
func Of(d *data.Dataset) (*Source, error) {
	switch {
	case d == nil:
		return nil, errors.New("empty data set")
	case d.Kind != data.Rows:
		return nil, fmt.Errorf("need rows data, got %s", d.Kind)
	case d.X != nil && !d.X.IsEmpty() || d.XBytes != nil:
		return &Source{ds: d, n: d.N(), p: d.P(), rows: pass.RowsMatrix(d)}, nil
	case d.Remote != nil:
		if d.Remote.Passer == nil || d.Remote.N < 1 || d.Remote.P < 1 {
			return nil, errors.New("remote data set without rows or pass runner")
		}
		return &Source{ds: d, n: d.Remote.N, p: d.Remote.P}, nil
	}
	return nil, errors.New("empty data set")
}

// Dims returns the public shape n×p.
func (s *Source) Dims() (n, p int) { return s.n, s.p }

// Rows returns the rows when they are in memory as float64, nil otherwise:
// only for the options no pass serves, which the estimators refuse on a
// remote data set before any step (and for which the SDK decodes rows kept
// as bytes).
func (s *Source) Rows() *mat.Dense { return s.ds.X }

// PrivateNorm releases the q-quantile of the norms ‖x_i − μ‖ (μ public:
// nil or an earlier private release) with the exponential mechanism on the
// default public grid (clip.PrivateNorm, one declared step at the plan's
// per-step budget of share; plugins/pca/DERIVATIONS.md §6) from one
// norm-histogram pass. The budget is read after the pass, so that an
// exact plan's calibration (privacy.Plan.Calibrate) runs beside it. A
// failed pass (a non-finite row) stops it before the step. Over rows in
// memory the norms are kept for the next pass about μ.
func (s *Source) PrivateNorm(ctx context.Context, acct *privacy.Accountant, rnd *privacy.Source, name string, plan *privacy.Plan, share string, mu []float64, q float64) (float64, error) {
	res, err := run(ctx, s, pass.RowsNormHistogramKind, pass.NormHistogramRequest{Grid: kernel.DefaultGrid(), Center: mu}, func(r *pass.NormHistogramRequest) (*pass.CountsResult, error) {
		c := pass.CenterOf(r.Center)
		sq, err := kernel.SqNorms(ctx, s.rows, c)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.center, s.sq = c, sq
		s.mu.Unlock()
		return pass.NormHistogramOf(ctx, s.rows, r, sq)
	})
	if err != nil {
		return 0, err
	}
	b, err := plan.Budget(share)
	if err != nil {
		return 0, err
	}
	return clip.PrivateNorm(acct, rnd, name, b, res.Counts, q)
}

// run returns the result of the pass q of kind k: pass.Run's on a remote
// data set; over rows in memory, local's on q as the host reads a request
// before running it (pass.Kind.DecodeRequest: finite parameters and inputs
// of their shapes, the kind's checks; a nil centre as zeros).
func run[Q, R any](ctx context.Context, s *Source, k *pass.Kind[Q, R], q Q, local func(*Q) (*R, error)) (*R, error) {
	if s.rows == nil {
		return k.Run(ctx, s.ds, q)
	}
	sh := pass.ShapeOf(s.ds)
	r, err := k.DecodeRequest(sh, k.EncodeRequest(sh, q))
	if err != nil {
		return nil, err
	}
	res, err := local(r)
	if err != nil {
		return nil, fmt.Errorf("pass %s: %w", k.Name, err)
	}
	return res, nil
}

// norms returns the kept squared norms about c (pass.CenterOf), or nil.
func (s *Source) norms(c []float64) []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Equal(s.center, c) {
		return nil
	}
	return s.sq
}

// Sum returns Σ_i min(1, c/‖x_i − μ‖)·(x_i − μ) (μ nil: 0; c ≤ 0: the
// plain sum of the centred rows).
func (s *Source) Sum(ctx context.Context, mu []float64, c float64) ([]float64, error) {
	res, err := run(ctx, s, pass.RowsClippedSumKind, pass.ClippedSumRequest{Clip: max(c, 0), Center: mu}, func(r *pass.ClippedSumRequest) (*pass.SumResult, error) {
		return pass.ClippedSumOf(ctx, s.rows, r, s.norms(pass.CenterOf(r.Center)))
	})
	if err != nil {
		return nil, err
	}
	return res.Sum, nil
}

// SecondMoment returns scale·Σ_i w_i²(x_i−μ)(x_i−μ)ᵀ with
// w_i = min(1, c/‖x_i−μ‖) (c ≤ 0 or +Inf: no clipping; mu nil: μ = 0) and
// the number of rows the clip shrank (evaluation only).
func (s *Source) SecondMoment(ctx context.Context, mu []float64, c, scale float64) (*mat.SymDense, int, error) {
	if !(c > 0) || c > math.MaxFloat64 {
		c = 0
	}
	res, err := run(ctx, s, pass.RowsCentredMomentKind, pass.CentredMomentRequest{Clip: c, Center: mu}, func(r *pass.CentredMomentRequest) (*pass.CentredMomentResult, error) {
		return pass.CentredMomentOf(ctx, s.rows, r, s.norms(pass.CenterOf(r.Center)))
	})
	if err != nil {
		return nil, 0, err
	}
	return scaled(s.p, res.Moment, scale), int(res.Clipped), nil
}

// scaled returns the upper triangle of the p×p row-major m, multiplied
// in place by scale, as a symmetric matrix over m.
func scaled(p int, m []float64, scale float64) *mat.SymDense {
	for a := 0; a < p; a++ {
		for b := a; b < p; b++ {
			m[a*p+b] *= scale
		}
	}
	return mat.NewSymDense(p, m)
}

// Moments returns the unclipped mean Σ_i x_i/n and second moment
// Σ_i x_i x_iᵀ/n of the rows: one pass of kind pass.RowsMoment with clip
// 0. It is what the evaluation figures (evaluate=true, never private) read.
func (s *Source) Moments(ctx context.Context) ([]float64, *mat.SymDense, error) {
	res, err := pass.RowsMomentKind.Run(ctx, s.ds, pass.MomentRequest{})
	if err != nil {
		return nil, nil, err
	}
	n := float64(res.Records)
	mean := make([]float64, s.p)
	for j, v := range res.Sum {
		mean[j] = v / n
	}
	return mean, scaled(s.p, res.Moment, 1/n), nil
}

// Kinds returns the pass kinds a fit that reads the given aggregates
// requests: the norm histogram (a private norm quantile), the clipped sum
// (a private mean) and, always, the clipped second moment.
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
