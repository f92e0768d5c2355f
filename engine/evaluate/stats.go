package evaluate

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// Quantile returns the q-quantile of v by linear interpolation between
// order statistics at position q·(len − 1) (Hyndman–Fan type 7, R's and
// NumPy's default), the definition every dplr table uses; NaN for an
// empty v. gonum's stat.Quantile offers the empirical CDF and its linear
// interpolation (type 4), whose median of an even-sized sample is the lower
// middle value rather than the midpoint, so it is not used for published
// medians. v is not modified.
func Quantile(q float64, v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	x := q * float64(len(s)-1)
	i := int(math.Floor(x))
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	if i < 0 {
		return s[0]
	}
	return s[i] + (x-float64(i))*(s[i+1]-s[i])
}

// Median is Quantile(0.5, v): the midpoint of the two middle values of an
// even-sized sample.
func Median(v []float64) float64 { return Quantile(0.5, v) }

// Quartiles returns the 25 %, 50 % and 75 % quantiles of v.
func Quartiles(v []float64) [3]float64 {
	return [3]float64{Quantile(0.25, v), Quantile(0.5, v), Quantile(0.75, v)}
}

// LogSlope fits log y = a + b·log x by least squares (gonum's
// stat.LinearRegression) and returns b, the empirical rate of y in x.
func LogSlope(x, y []float64) float64 {
	lx := make([]float64, len(x))
	ly := make([]float64, len(y))
	for i := range x {
		lx[i], ly[i] = math.Log(x[i]), math.Log(y[i])
	}
	_, b := stat.LinearRegression(lx, ly, nil, false)
	return b
}
