package predict

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

func TestPredict(t *testing.T) {
	u := mat.NewDense(3, 2, []float64{1, 0, 0, 1, 0, 0})
	v := mat.NewDense(2, 2, []float64{2, -1, 0.5, 0.5})
	ids := mat.NewDense(2, 1, []float64{17, 4})
	head, err := HeadOf(v, ids, 4)
	require.NoError(t, err)
	assert.Equal(t, []float64{0.5, 0.5}, head)
	x := mat.NewDense(2, 3, []float64{1, 1, 9, -1, -2, 9})
	got, err := Predict(u, head, x, false)
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{1, -1.5}, got, 1e-12)
	got, err = Predict(u, head, x, true)
	require.NoError(t, err)
	assert.Equal(t, []float64{1, -1}, got)
	_, err = HeadOf(v, ids, 5)
	assert.ErrorIs(t, err, ErrUnknownUser)
	_, err = Predict(u, head, mat.NewDense(1, 2, nil), false)
	assert.Error(t, err)
	head0, err := HeadOf(v, nil, 0)
	require.NoError(t, err)
	assert.Equal(t, []float64{2, -1}, head0)
}
