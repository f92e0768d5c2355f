package pca

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/sdk"
)

// The 3×60,000 CSV of issue 14: its p×p matrices would need about 115 GB,
// which the estimate states before anything is reserved; Fashion-MNIST's
// 60,000×784 stays well under a gigabyte.
func TestFootprintOfWideData(t *testing.T) {
	info, err := sdk.InfoOf(AnalyzeGauss{})
	require.NoError(t, err)
	_, fp, err := sdk.Prepare(info, map[string]string{"rank": "2", "clip": "1"}, sdk.Shape{Kind: data.Rows, N: 3, P: 60000})
	require.NoError(t, err)
	assert.Greater(t, fp, int64(100e9))
	_, fp, err = sdk.Prepare(info, map[string]string{"rank": "10"}, sdk.Shape{Kind: data.Rows, N: 60000, P: 784})
	require.NoError(t, err)
	assert.Less(t, fp, int64(1e9))
}
