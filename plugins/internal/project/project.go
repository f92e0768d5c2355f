// Package project is the transform of the PCA estimators (plugins pca and
// orbit, which release the same outputs): new rows projected onto the
// released components.
package project

import (
	"context"
	"errors"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/sdk"
)

// Transform projects rows onto the released components: (x − mean)·U,
// with the released private mean when the fit centred (center=private),
// after dividing each column by the released feature_scale when the fit
// scaled the features (feature_scale=private or released). It takes no
// options. A model or rows that do not fit together are an error (not a
// BadRequest: the data, not the request, is at fault).
func Transform(m *sdk.Model, opts map[string]string, x *mat.Dense) (sdk.Matrix, error) {
	if len(opts) > 0 {
		return sdk.Matrix{}, sdk.BadRequest("the transform of %s takes no options", m.Estimator)
	}
	xc, u, err := Prepared(m, x)
	if err != nil {
		return sdk.Matrix{}, err
	}
	var out mat.Dense
	out.Mul(xc, u)
	return sdk.Matrix{Name: "scores", M: &out, Doc: "n×r scores (x/feature_scale − mean)·U on the released components"}, nil
}

// Prepared returns the rows x with the model's released preprocessing
// applied (x/feature_scale − mean, each part when released), and U.
func Prepared(m *sdk.Model, x *mat.Dense) (xc, u *mat.Dense, err error) {
	if u, err = m.Matrix("U"); err != nil {
		return nil, nil, err
	}
	if u == nil {
		return nil, nil, errors.New("the model released no components U")
	}
	mean, err := m.Matrix("mean")
	if err != nil {
		return nil, nil, err
	}
	scale, err := m.Matrix("feature_scale")
	if err != nil {
		return nil, nil, err
	}
	if m.Params["center"] == "private" && mean == nil {
		return nil, nil, errors.New("the fit centred with a private mean but released none: refit with this version of dplr")
	}
	n, p := x.Dims()
	if up, _ := u.Dims(); p != up {
		return nil, nil, fmt.Errorf("the data have %d columns, the model's components %d", p, up)
	}
	var div, sub []float64
	if scale != nil {
		if _, sp := scale.Dims(); sp != p {
			return nil, nil, fmt.Errorf("the model's feature_scale has %d entries, the data %d columns", sp, p)
		}
		div = scale.RawRowView(0)
	}
	if mean != nil {
		if _, mp := mean.Dims(); mp != p {
			return nil, nil, fmt.Errorf("the model's mean has %d entries, the data %d columns", mp, p)
		}
		sub = mean.RawRowView(0)
	}
	xc = mat.NewDense(n, p, nil)
	for i := 0; i < n; i++ {
		dst := xc.RawRowView(i)
		for j := range dst {
			v := x.At(i, j)
			if div != nil {
				v /= div[j]
			}
			if sub != nil {
				v -= sub[j]
			}
			dst[j] = v
		}
	}
	return xc, u, nil
}

// Projection gives an estimator type the PCA transform by embedding it
// (type AnalyzeGauss struct{ project.Projection }): every pca and orbit
// estimator serves dplr transform with the one projection above.
type Projection struct{}

// Transform implements sdk.Transformer with Transform.
func (Projection) Transform(_ context.Context, m *sdk.Model, opts map[string]string, x *mat.Dense) (sdk.Matrix, error) {
	return Transform(m, opts, x)
}
