package pca

import "github.com/dplr/dplr/engine/sdk"

// footprint estimates a PCA fit's peak memory from the public n and p: the
// rows when they are not mapped in place, and a handful of p×p matrices.
func footprint(s sdk.Shape) int64 {
	n, p := int64(s.N), int64(s.P)
	return 8 * (n*p + 4*p*p)
}

// Footprint implements sdk's memory-estimate hook for the clipped
// estimators, whose options embed centerOptions: feature_scale=private adds
// a divided copy of the rows.
func (c *centerOptions) Footprint(s sdk.Shape) int64 {
	if c.scaled() {
		return footprint(s) + 8*int64(s.N)*int64(s.P)
	}
	return footprint(s)
}

// Footprint implements sdk's memory-estimate hook (the spectral projector
// adds one more p×p matrix).
func (o *cxzOptions) Footprint(s sdk.Shape) int64 { return footprint(s) + 8*int64(s.P)*int64(s.P) }

// Footprint implements sdk's memory-estimate hook.
func (o *nonPrivateOptions) Footprint(s sdk.Shape) int64 { return footprint(s) }
