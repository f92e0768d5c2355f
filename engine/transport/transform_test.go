package transport

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/sdk"
)

// projEst transforms rows by its model's inline matrix W: x·W.
type projEst struct{ testEst }

func (projEst) Transform(_ context.Context, m *sdk.Model, _ map[string]string, x *mat.Dense) (sdk.Matrix, error) {
	w, err := m.Matrix("W")
	if err != nil || w == nil {
		return sdk.Matrix{}, sdk.BadRequest("no W")
	}
	var y mat.Dense
	y.Mul(x, w)
	return sdk.Matrix{Name: "y", M: &y, Doc: "x·W"}, nil
}

// TestTransformOverTheWire: the host's Client sends the model and the
// rows' handle, the server maps the rows by the estimator's Transformer
// and streams one matrix back; an estimator without a transform, or a
// model it refuses, is a refusal.
func TestTransformOverTheWire(t *testing.T) {
	info := sdk.Info{Name: "t", DataKind: data.Rows, NonPrivate: true}
	srv, err := NewServer("p", "0", projEst{testEst{info}}, testEst{sdk.Info{Name: "plain", DataKind: data.Rows, NonPrivate: true}})
	require.NoError(t, err)
	c := &Client{rpc: dial(t, srv)}
	ds := &data.Dataset{Kind: data.Rows, X: mat.NewDense(2, 3, []float64{1, 2, 3, 4, 5, 6})}
	h, err := dataio.Prepare(ds, t.TempDir())
	require.NoError(t, err)
	model := sdk.Model{Estimator: "t", Outputs: []sdk.ModelOutput{{Name: "W", Rows: 3, Cols: 1, Value: []float64{1, 0, -1}}}}

	run := func(m sdk.Model) ([]Event, error) {
		s, err := c.Transform(context.Background(), TransformRequest{Model: m, Data: h})
		require.NoError(t, err)
		var evs []Event
		for {
			e, err := s.Recv()
			if errors.Is(err, io.EOF) {
				return evs, nil
			}
			if err != nil {
				return evs, err
			}
			evs = append(evs, e)
		}
	}
	evs, err := run(model)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, MatrixChunk{Name: "y", Rows: 2, Cols: 1, Data: []float64{-2, -2}, Doc: "x·W"}, evs[0])

	for _, m := range []sdk.Model{{Estimator: "plain"}, {Estimator: "t"}} {
		_, err = run(m)
		f, _ := Classify(err)
		assert.Equal(t, Refused, f, "%s: %v", m.Estimator, err)
	}
}
