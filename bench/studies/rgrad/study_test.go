package rgradstudy

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A one-seed study at a small size runs every variant and renders its
// tables.
func TestSmallStudy(t *testing.T) {
	c := DefaultStudyConfig()
	c.D1, c.D2, c.Seeds, c.Iterations = 10, 8, 1, 3
	ns, eps := []int{1000}, []float64{4, math.Inf(1)}
	cells, err := RunStudy(context.Background(), c, ns, eps, DefaultVariants(c), nil)
	require.NoError(t, err)
	assert.Len(t, cells, 2*len(DefaultVariants(c)))
	for _, cl := range cells {
		assert.Len(t, cl.Rel, 1)
		assert.Greater(t, cl.Rel[0], 0.0, cl.Variant)
	}
	md := StudyMarkdown(c, cells, ns, eps)
	assert.True(t, strings.Contains(md, "rgrad-weak"))
}
