package dataio

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIdentityPartsMerge checks that rows hashed in shards and merged in
// any grouping give the identity of the whole matrix.
func TestIdentityPartsMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n, p := 1000, 7
	x := make([]float64, n*p)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	want := matrixBuilder(x, n, p).finish()
	for _, cuts := range [][]int{{0, n}, {0, 1, 500, 999, n}, {0, 300, 300, 700, n}} {
		var parts []IdentityParts
		for k := 0; k+1 < len(cuts); k++ {
			var q IdentityParts
			for i := cuts[len(cuts)-2-k]; i < cuts[len(cuts)-1-k]; i++ { // shards in reverse order
				q.AddRow(x[i*p : (i+1)*p])
			}
			parts = append(parts, q)
		}
		var all IdentityParts
		for _, q := range parts {
			all.Merge(q)
		}
		require.Equal(t, want, all.Identity())
	}
}

// AddRow hashes one source row (unscaled values, as the file holds them).
func (p *IdentityParts) AddRow(x []float64) { p.AddRecord(x, nil, nil) }
