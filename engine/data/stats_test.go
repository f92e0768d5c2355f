package data

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// validStats are the statistics of the rows (1, 0) and (0, 2) clipped to 1.
func validStats() *Statistics {
	return &Statistics{N: 2, P: 2, Clip: 1, Sum: []float64{1, 1}, Moment: mat.NewSymDense(2, []float64{1, 0, 0, 1})}
}

// TestStatisticsCheck: shapes, finiteness, the diagonal's sign and the
// bounds the clip implies.
func TestStatisticsCheck(t *testing.T) {
	require.NoError(t, validStats().Check())
	cases := []struct {
		name string
		edit func(s *Statistics)
		want string
	}{
		{"no rows", func(s *Statistics) { s.N = 0 }, "shape"},
		{"short sum", func(s *Statistics) { s.Sum = s.Sum[:1] }, "sum of 1 values"},
		{"moment of another size", func(s *Statistics) { s.Moment = mat.NewSymDense(3, nil) }, "not 2×2"},
		{"NaN", func(s *Statistics) { s.Moment.SetSym(0, 1, math.NaN()) }, "not finite"},
		{"Inf clip", func(s *Statistics) { s.Clip = math.Inf(1) }, "clip"},
		{"negative diagonal", func(s *Statistics) { s.Moment.SetSym(1, 1, -1) }, "negative"},
		{"sum above n·clip", func(s *Statistics) { s.Sum = []float64{2, 2} }, "not clipped"},
		{"trace above n·clip²", func(s *Statistics) { s.Moment.SetSym(0, 0, 3) }, "not clipped"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := validStats()
			c.edit(s)
			err := s.Check()
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	unclipped := validStats()
	unclipped.Clip, unclipped.Sum = 0, []float64{100, 100}
	assert.NoError(t, unclipped.Check(), "no clip: no bound")
}
