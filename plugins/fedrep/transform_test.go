package fedrep

import (
	"os"

	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/dataio"
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

func TestReadNPYRow(t *testing.T) {
	path := t.TempDir() + "/v.npy"
	data := []float64{1, 2, 3, 4, 5, 6}
	require.NoError(t, dataio.SaveNPYFloat64(path, []int{3, 2}, data))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	row, n, err := ReadNPYRow(f, 1)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.Equal(t, []float64{3, 4}, row)
	_, _, err = ReadNPYRow(f, 3)
	assert.Error(t, err)
}
