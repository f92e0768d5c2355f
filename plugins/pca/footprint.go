package pca

import "github.com/dplr/dplr/engine/sdk"

// footprint estimates a PCA fit's peak memory from the public n and p: the
// rows when they are not mapped in place, and a handful of p×p matrices.
func footprint(s sdk.Shape) int64 {
	n, p := int64(s.N), int64(s.P)
	return 8 * (n*p + 4*p*p)
}

// scaledFootprint adds the divided copy of the rows that
// feature_scale=private makes.
func scaledFootprint(s sdk.Shape, ctr *centerOptions) int64 {
	if ctr.scaled() {
		return footprint(s) + 8*int64(s.N)*int64(s.P)
	}
	return footprint(s)
}

// Footprint implements sdk's memory-estimate hook.
func (o *analyzeGaussOptions) Footprint(s sdk.Shape) int64 {
	return scaledFootprint(s, &o.centerOptions)
}

// Footprint implements sdk's memory-estimate hook.
func (o *aminOptions) Footprint(s sdk.Shape) int64 { return scaledFootprint(s, &o.centerOptions) }

// Footprint implements sdk's memory-estimate hook (the spectral projector
// adds one more p×p matrix).
func (o *cxzOptions) Footprint(s sdk.Shape) int64 { return footprint(s) + 8*int64(s.P)*int64(s.P) }

// Footprint implements sdk's memory-estimate hook.
func (o *nonPrivateOptions) Footprint(s sdk.Shape) int64 { return footprint(s) }
