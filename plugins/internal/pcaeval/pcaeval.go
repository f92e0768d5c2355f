// Package pcaeval is the one implementation of the evaluate option of the
// PCA estimators (plugins pca and orbit): the captured-variance ratio of
// the released components on the raw rows, labelled evaluation-only. It
// also holds the one public figure they derive alike from their private
// releases, the explained-variance ratio (ExplainedRatio).
//
// The figure to quote is the centred ratio captured_variance_ratio,
// tr(ŨᵀCŨ)/tr(ÛᵀCÛ) with C the rows' covariance and Û its top-r
// eigenvectors (scikit-learn's objective; 1 is as good as non-private PCA).
// An estimator that did not centre also gets the uncentred ratio,
// captured_variance_ratio_uncentred (plugins/pca/DERIVATIONS.md §8).
package pcaeval

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/evaluate"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/rowsrc"
)

// Centring says whether the estimator centred its rows.
type Centring bool

// Centrings.
const (
	// Uncentred: the estimator worked on the uncentred second moment.
	Uncentred Centring = false
	// Centred: the estimator subtracted a mean (private or empirical).
	Centred Centring = true
)

// MeanName is the output a centring estimator releases its private mean as.
const MeanName = "mean"

// CentringOf reads the centring from a result: Centred when it released a
// private mean (output MeanName).
func CentringOf(res *sdk.Result) Centring {
	for _, m := range res.Matrices {
		if m.Name == MeanName {
			return Centred
		}
	}
	return Uncentred
}

// Add implements evaluate=true (on): the captured-variance ratios of res's
// released U on run's raw rows (divided by a released feature_scale), from
// their mean and second moment (one aggregation pass), added to res as
// evaluation-only scalars. With on false res is returned without them.
// Either way res gets the few-columns warning (WarnFewColumns).
func Add(ctx context.Context, run *sdk.Run, res *sdk.Result, on bool, c Centring) (*sdk.Result, error) {
	WarnFewColumns(res)
	if !on {
		return res, nil
	}
	src, err := rowsrc.Of(run.Data)
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	return addMoments(ctx, run, src, res, c)
}

// FewColumnsWeight is the share of the first released component's squared
// weight above which it counts as carried by its one or two largest
// loadings (WarnFewColumns).
const FewColumnsWeight = 0.95

// WarnFewColumns adds a warning to res when the first released component
// (of output U) is carried by one column alone (p ≥ 3) or by two (p ≥ 5):
// FewColumnsWeight of its squared weight. PCA returns this when one or two
// columns' variance dwarfs the others', as when the columns are in
// different units (on raw tables in mixed units it fires, standardised it
// needs four columns or more: bench/results/tables.md). It reads only the
// released U, so it is post-processing and spends nothing; a result
// without U (a planned stop) gets none.
func WarnFewColumns(res *sdk.Result) {
	u, err := releasedU(res)
	if err != nil {
		return
	}
	p, k := u.Dims()
	if p < 3 || k < 1 {
		return
	}
	first, second := -1, -1 // the columns of the two largest loadings
	for j := 0; j < p; j++ {
		switch v := math.Abs(u.At(j, 0)); {
		case first < 0 || v > math.Abs(u.At(first, 0)):
			first, second = j, first
		case second < 0 || v > math.Abs(u.At(second, 0)):
			second = j
		}
	}
	var total float64
	for j := 0; j < p; j++ {
		total += u.At(j, 0) * u.At(j, 0)
	}
	w1 := u.At(first, 0) * u.At(first, 0) / total
	w2 := w1 + u.At(second, 0)*u.At(second, 0)/total
	var which string
	var w float64
	switch {
	case w1 >= FewColumnsWeight:
		which, w = fmt.Sprintf("column %d alone", first+1), w1
	case p >= 5 && w2 >= FewColumnsWeight:
		which, w = fmt.Sprintf("columns %d and %d alone", first+1, second+1), w2
	default:
		return
	}
	res.AddWarning(fmt.Sprintf("component 1 is %s (%.0f%% of its squared weight; columns counted from 1): PCA returns this when a column's variance dwarfs the others', "+
		"as when the columns are in different units. If they are, give public per-column scales (--column-scales FILE, or column_scales in Python) and fit again; "+
		"if those columns truly dominate, the component is right", which, 100*w))
}

// releasedU returns res's output U.
func releasedU(res *sdk.Result) (mat.Matrix, error) {
	for _, m := range res.Matrices {
		if m.Name == "U" {
			return m.M, nil
		}
	}
	return nil, fmt.Errorf("evaluate: the estimator released no U")
}

// centredDoc documents the centred ratio.
const centredDoc = "tr(ŨᵀCŨ)/tr(ÛᵀCÛ), C the covariance of the raw rows about their empirical mean, Û its top-r eigenvectors: the share of the best rank-r variance the released components capture (scikit-learn's convention; 1 = as good as non-private PCA) — EVALUATION ONLY, computed from the raw data, not private"

// addRatios adds the ratios to res: the centred one, and for an
// uncentred estimator the uncentred one.
func addRatios(run *sdk.Run, res *sdk.Result, c Centring, ratio, un float64) *sdk.Result {
	res.AddScalar(evaluate.RatioCentred, ratio, sdk.Evaluation, centredDoc)
	if c != Centred {
		res.AddScalar(evaluate.RatioUncentred, un, sdk.Evaluation,
			"the same ratio on the UNCENTRED second moment XᵀX/n of the raw rows, the objective of an estimator that does not centre; it flatters a subspace that mostly holds the mean direction — EVALUATION ONLY, not private")
	}
	run.Progress("evaluation", 1, 1)
	return res
}

// addMoments is Add on the rows of src: the ratios from the unclipped
// mean and second moment of its rows (Source.Moments, one pass of kind
// rows.moment with clip 0), divided by the released feature_scale when
// res has one, so that the ratios score the space the estimate lives in.
func addMoments(ctx context.Context, run *sdk.Run, src *rowsrc.Source, res *sdk.Result, c Centring) (*sdk.Result, error) {
	u, err := releasedU(res)
	if err != nil {
		return nil, err
	}
	if up, _ := u.Dims(); up != pOf(src) {
		return nil, fmt.Errorf("evaluate: basis with %d rows for %d columns", up, pOf(src))
	}
	_, rank := u.Dims()
	run.Progress("evaluation", 0, 1)
	mean, s, err := src.Moments(ctx)
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	if err := divideByScale(res, mean, s); err != nil {
		return nil, err
	}
	ratio := func(a mat.Symmetric) (float64, error) {
		t, _, err := run.Backend.EigSymTop(a, rank)
		if err != nil {
			return 0, fmt.Errorf("evaluate: captured variance: %w", err)
		}
		return evaluate.CapturedRatio(a, u, t), nil
	}
	cr, err := ratio(evaluate.Centre(s, mean))
	if err != nil {
		return nil, err
	}
	un := math.NaN()
	if c != Centred {
		if un, err = ratio(s); err != nil {
			return nil, err
		}
	}
	return addRatios(run, res, c, cr, un), nil
}

// FeatureScaleName is the output an estimator that divided every column by
// a released scale (1×p) releases the scales as.
const FeatureScaleName = "feature_scale"

// divideByScale turns the moments of the rows x into those of x/f, f res's
// output FeatureScaleName, when it has one.
func divideByScale(res *sdk.Result, mean []float64, s *mat.SymDense) error {
	for _, m := range res.Matrices {
		if m.Name != FeatureScaleName {
			continue
		}
		if _, c := m.M.Dims(); c != len(mean) {
			return fmt.Errorf("evaluate: %d feature scales for %d columns", c, len(mean))
		}
		DivideMoments(mat.Row(nil, 0, m.M), mean, s)
	}
	return nil
}

// DivideMoments turns a mean and a second moment of rows x (either may be
// nil) into those of x/f, in place: mean_j/f_j and s_ij/(f_i·f_j).
func DivideMoments(f, mean []float64, s *mat.SymDense) {
	for i, fi := range f {
		if mean != nil {
			mean[i] /= fi
		}
		for j := i; s != nil && j < len(f); j++ {
			s.SetSym(i, j, s.At(i, j)/(fi*f[j]))
		}
	}
}

// pOf is the number of columns of src.
func pOf(src *rowsrc.Source) int {
	_, p := src.Dims()
	return p
}

// ExplainedRatio is the explained-variance-ratio estimate from released
// (private) eigenvalues vals and the released sum rest of the other
// eigenvalues: max(v_k, 0)/(Σ_j max(v_j, 0) + max(rest, 0)), negative
// noisy values counting as 0. It is post-processing of the release and
// costs no budget. ok is false when the denominator is not positive.
func ExplainedRatio(vals []float64, rest float64) (ratio []float64, ok bool) {
	total := math.Max(rest, 0)
	ratio = make([]float64, len(vals))
	for k, v := range vals {
		ratio[k] = math.Max(v, 0)
		total += ratio[k]
	}
	if !(total > 0) || math.IsInf(total, 0) {
		return nil, false
	}
	for k := range ratio {
		ratio[k] /= total
	}
	return ratio, true
}
