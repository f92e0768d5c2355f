package sdk

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/dataio"
)

// Transformer is implemented by an Estimator whose fitted models map new
// rows (a projection, a prediction). Transform maps the rows x through the
// model m under the caller's options opts (a user id, say) and returns one
// matrix whose Doc says in a line what it is. It is post-processing: it
// must use only m's released outputs, opts and x, and it spends no budget
// (it has no Run to take a privacy step with). A refusal of the model,
// options or rows should be a BadRequest.
type Transformer interface {
	Transform(ctx context.Context, m *Model, opts map[string]string, x *mat.Dense) (Matrix, error)
}

// Model is a fitted model as its estimator's transform sees it: the fit's
// parameters and released public outputs, nothing else.
type Model struct {
	Estimator string
	Params    map[string]string
	Outputs   []ModelOutput
	Scalars   map[string]float64
}

// ModelOutput is one released public matrix of a model: in the .npy file
// the fit wrote (File) or inline (Value, row-major).
type ModelOutput struct {
	Name       string
	Rows, Cols int
	File       string
	Value      []float64
}

// Output returns the output name.
func (m *Model) Output(name string) (ModelOutput, bool) {
	for _, o := range m.Outputs {
		if o.Name == name {
			return o, true
		}
	}
	return ModelOutput{}, false
}

// Matrix loads the output name (nil, nil when the model has none),
// checking its shape against the one recorded, if any.
func (m *Model) Matrix(name string) (*mat.Dense, error) {
	o, ok := m.Output(name)
	if !ok {
		return nil, nil
	}
	if o.File == "" {
		if o.Rows < 1 || o.Cols < 1 || len(o.Value) != o.Rows*o.Cols {
			return nil, BadRequest("model output %s has neither a file nor its %d×%d values inline", name, o.Rows, o.Cols)
		}
		return mat.NewDense(o.Rows, o.Cols, append([]float64(nil), o.Value...)), nil
	}
	ds, err := dataio.Load(o.File, dataio.LoadOptions{})
	if err != nil {
		return nil, fmt.Errorf("model output %s: %w", name, err)
	}
	if r, c := ds.X.Dims(); (o.Rows > 0 || o.Cols > 0) && (r != o.Rows || c != o.Cols) {
		return nil, BadRequest("model output %s: %s holds %d×%d, the model says %d×%d", name, o.File, r, c, o.Rows, o.Cols)
	}
	return mat.DenseCopyOf(ds.X), nil
}
