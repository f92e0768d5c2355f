package host

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/ledger"
)

// sketchSets is a SketchLedger holding fixed data sets.
type sketchSets []ledger.Dataset

func (s sketchSets) Datasets(context.Context) ([]ledger.Dataset, error) { return s, nil }

// sketchOf is the bottom-k sketch of a set of row hashes.
func sketchOf(rows ...[]uint64) []uint64 {
	var all []uint64
	for _, r := range rows {
		all = append(all, r...)
	}
	slices.Sort(all)
	all = slices.Compact(all)
	return all[:min(len(all), dataio.SketchSize)]
}

func rowHashes(r *rand.Rand, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = r.Uint64()
	}
	return out
}

// A data set whose rows are mostly rows of exactly one budgeted data set
// (a fold) is counted against it; a superset with most of its rows
// outside it, or data sharing rows with two budgeted data sets, is
// refused naming them; `budget set` refuses every overlap of a majority.
func TestOverlapsLinksOnlyAContainedDataSet(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	d, e, other := rowHashes(r, 2000), rowHashes(r, 2000), rowHashes(r, 6000)
	sets := sketchSets{
		{Hash: strings.Repeat("d", 64), Name: "d", HasBudget: true, Sketch: sketchOf(d), Aliases: []string{strings.Repeat("a", 64)}},
		{Hash: strings.Repeat("e", 64), Name: "e", HasBudget: true, Sketch: sketchOf(e)},
		{Hash: strings.Repeat("f", 64), Name: "unbudgeted", Sketch: sketchOf(other)},
	}
	key := strings.Repeat("1", 64)
	for _, tc := range []struct {
		name  string
		rows  []uint64
		key   string
		into  string // the data set it is counted against ("" none)
		refer []string
	}{
		{"a 70% fold", d[:1400], key, "d", nil},
		{"a 20% fold", d[1600:], key, "d", nil},
		{"a fold with a few other rows", append(slices.Clone(d[:1400]), other[:100]...), key, "d", nil},
		{"unrelated rows", other, key, "", nil},
		{"already linked to d", d[:1400], strings.Repeat("a", 64), "", nil},
		{"a superset", append(slices.Clone(d), other...), key, "", []string{"d"}},
		{"rows of two budgeted data sets", append(slices.Clone(d[:1400]), e[:300]...), key, "", []string{"d", "e"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &dataio.Identity{Sketch: sketchOf(tc.rows)}
			o, err := Overlaps(ctx, sets, tc.key, src)
			set := CheckOverlap(ctx, sets, tc.key, src)
			if tc.refer != nil {
				require.ErrorIs(t, err, ErrBudget)
				for _, n := range tc.refer {
					assert.Contains(t, err.Error(), " "+n+" (about")
				}
				assert.Nil(t, o)
				require.ErrorIs(t, set, ErrBudget)
				return
			}
			require.NoError(t, err)
			if tc.into == "" {
				assert.Nil(t, o)
				assert.NoError(t, set)
				return
			}
			require.NotNil(t, o)
			assert.Equal(t, tc.into, o.Dataset.Name)
			assert.Greater(t, o.In, OverlapRefuse)
			require.ErrorIs(t, set, ErrBudget, "no second budget on a fold")
			assert.Contains(t, set.Error(), "budgeted data set d")
		})
	}
}
