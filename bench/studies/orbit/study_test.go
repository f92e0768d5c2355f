package orbitstudy

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStudySmoke(t *testing.T) {
	for _, task := range []string{TaskPCA, TaskRankK} {
		cfg := StudyConfig{Task: task, D: 6, K: 2, N: 200, Spike: 10, Eps: []float64{0.5, 4}, Reps: 3, Sweeps: 20, Delta: 1e-6, BetaF: 0.05, Seed: 3}
		rows, err := RunStudy(context.Background(), cfg)
		require.NoError(t, err)
		require.Len(t, rows, 6)
		for _, r := range rows {
			assert.Equal(t, 3, r.Runs)
			assert.False(t, math.IsNaN(r.Median), r.Mechanism)
		}
		var sb strings.Builder
		require.NoError(t, WriteStudyMarkdown(&sb, rows))
		assert.Contains(t, sb.String(), "orbit-")
		_, err = json.Marshal(rows)
		require.NoError(t, err)
	}
	mix, err := RunMixingStudy(context.Background(), StudyConfig{D: 6, K: 2, N: 200, Spike: 10, Eps: []float64{1}, Reps: 4, Seed: 3}, []int{1, 5})
	require.NoError(t, err)
	require.Len(t, mix, 2)
	var sb strings.Builder
	require.NoError(t, WriteMixingMarkdown(&sb, mix))
	assert.Contains(t, sb.String(), "| 6 | 2 | 1 | 5 |")
}
