package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/host"
	"github.com/dplr/dplr/engine/sdk"
)

// TransformRequest asks for new rows to be mapped through a fitted model.
type TransformRequest struct {
	// Model is the output directory of a fit (its result.json and .npy
	// outputs).
	Model string
	// Data are the new rows, read the same way as for the fit.
	Data Data
	// Options are the transform's own options (a personalization model
	// takes user and labels).
	Options map[string]string
}

// Transformed is the output of a transform.
type Transformed struct {
	// Estimator is the estimator that fitted the model.
	Estimator string
	Y         *mat.Dense
	// Doc says in a line what Y is.
	Doc string
}

// Transform maps new rows through the fitted model in req.Model, by the
// plugin serving the estimator its result.json records (the plugin that
// made it), run as a fit is. It is post-processing of the model's released
// public outputs and the caller's rows: it spends no budget and does not
// touch the ledger.
func (c *Client) Transform(ctx context.Context, req TransformRequest) (*Transformed, error) {
	m, err := ReadModel(req.Model)
	if err != nil {
		return nil, err
	}
	plug, _, err := c.lookup(ctx, m.Estimator)
	if err != nil {
		return nil, err
	}
	prep, err := c.prepare(ctx, req.Data, data.Rows)
	if err != nil {
		return nil, err
	}
	y, err := plug.Transform(ctx, m.Model, req.Options, prep.handle)
	switch {
	case err == nil:
		return &Transformed{Estimator: m.Estimator, Y: mat.NewDense(y.Rows, y.Cols, y.Data), Doc: y.Doc}, nil
	case errors.Is(err, context.Canceled):
		return nil, classed(ErrInterrupted, err)
	case errors.Is(err, host.ErrRequest):
		return nil, classed(ErrUsage, err)
	case errors.Is(err, host.ErrEstimator):
		// The rows do not fit the model.
		return nil, classed(ErrData, err)
	}
	return nil, classed(ErrPlugin, err)
}

// Model is a fitted model as ReadModel reads it from a fit's output
// directory: what its transform sees, and the public per-column scales
// the fit divided its columns by (--column-scales), which the new rows
// are read with too.
type Model struct {
	sdk.Model
	ColumnScales []float64
}

// ReadModel reads a fit's output directory: the estimator, its parameters,
// the released outputs (files by absolute path) and the column scales. A
// model is its public and per-user outputs (a personalization transform
// reads only its user's row of a per-user one); a non-private reference
// fit (guarantee "none") has only evaluation outputs, and transforming
// with them is what its user opted into. A result.json that cannot be read
// is a usage error; a model file that is not a regular file (a FIFO would
// hang the plugin) a data error.
func ReadModel(dir string) (*Model, error) {
	res := filepath.Join(dir, "result.json")
	if err := regularFile(res); err != nil {
		return nil, classedf(ErrUsage, "model %s: %w (give the output directory of a dplr fit)", dir, err)
	}
	b, err := os.ReadFile(res)
	if err != nil {
		return nil, classedf(ErrUsage, "model %s: %w (give the output directory of a dplr fit)", dir, err)
	}
	var rep struct {
		Estimator string         `json:"estimator"`
		Params    map[string]any `json:"params"`
		Data      struct {
			ColumnScales []float64 `json:"column_scales"`
		} `json:"data"`
		Privacy struct {
			Guarantee string `json:"guarantee"`
		} `json:"privacy"`
		Outputs struct {
			Matrices []struct {
				Name, Release, File string
				Rows, Cols          int
				Value               [][]float64
			} `json:"matrices"`
			Scalars []struct {
				Name, Release string
				Value         float64
			} `json:"scalars"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, classedf(ErrUsage, "model %s: result.json: %w", dir, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, classedf(ErrUsage, "model %s: %w", dir, err)
	}
	usable := func(release string) bool {
		switch sdk.Release(release) {
		case sdk.Public, sdk.PerUser, "":
			return true
		case sdk.Evaluation:
			return rep.Privacy.Guarantee == "none"
		}
		return false
	}
	m := &Model{Model: sdk.Model{Estimator: rep.Estimator, Params: map[string]string{}, Scalars: map[string]float64{}},
		ColumnScales: rep.Data.ColumnScales}
	for k, v := range rep.Params {
		m.Params[k] = fmt.Sprint(v)
	}
	for _, o := range rep.Outputs.Matrices {
		if !usable(o.Release) {
			continue
		}
		out := sdk.ModelOutput{Name: o.Name, Rows: o.Rows, Cols: o.Cols}
		if o.File != "" {
			if o.File != filepath.Base(o.File) || o.File == ".." || o.File == "." {
				return nil, classedf(ErrUsage, "model output %s: file %q is not a file of the model directory", o.Name, o.File)
			}
			out.File = filepath.Join(abs, o.File)
			if err := regularFile(out.File); err != nil {
				return nil, classedf(ErrData, "model output %s: %w", o.Name, err)
			}
		}
		for _, row := range o.Value {
			out.Value = append(out.Value, row...)
		}
		m.Outputs = append(m.Outputs, out)
	}
	for _, s := range rep.Outputs.Scalars {
		if usable(s.Release) {
			m.Scalars[s.Name] = s.Value
		}
	}
	return m, nil
}

// regularFile refuses a path that is not a regular file (a FIFO, a device
// or a directory) before anything opens it.
func regularFile(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("model file %s is not a regular file (%s)", path, st.Mode().Type())
	}
	return nil
}
