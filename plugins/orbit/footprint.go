package orbit

import "github.com/dplr/dplr/engine/sdk"

// footprint estimates an orbit fit's peak memory: the rows when not mapped
// in place (n·p values) and a few d×d matrices (the clipped second moment,
// its noisy or rotated copies and the eigendecomposition's workspace).
// n and d are public under replace-one neighbours.
func footprint(s sdk.Shape) int64 {
	n, d := int64(s.N), int64(s.P)
	return 8 * (n*d + 5*d*d)
}

// Footprint implements sdk's memory-estimate hook for every orbit
// estimator's options.
func (b *base) Footprint(s sdk.Shape) int64 { return footprint(s) }
