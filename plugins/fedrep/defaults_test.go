package fedrep

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/evaluate"
	"github.com/dplr/dplr/engine/sdk"
)

// TestDefaultsErrorFallsWithEpsilon checks fedrep-private with its defaults
// on the shared-representation task of issue 28 (5000 users × 10 rows,
// d = 20, rank 2): the median over three fresh-noise runs of ‖sin Θ‖_F
// against the generating U* does not grow as ε goes 1, 2, 4, 8. The
// tolerance, 0.001, is above the largest spread of three runs measured at
// one ε ≥ 2 with the defaults (0.0008 at ε = 2) and far below the growth
// that T = 5 (the default before) shows: medians 0.0073, 0.0039, 0.0093,
// 0.020 (bench/results/fedrep-defaults.md).
func TestDefaultsErrorFallsWithEpsilon(t *testing.T) {
	if testing.Short() {
		t.Skip("12 fits on 5000 users")
	}
	g := genUsers(t, 5000, 10, 20, 2, 0.01, 1)
	const tol = 0.001
	prev := 1.0
	for _, eps := range []float64{1, 2, 4, 8} {
		var errs []float64
		for seed := uint64(1); seed <= 3; seed++ {
			res, _ := fit(t, PrivateFedRep{}, g.Data, nil, approx(eps), seed)
			_, f, err := evaluate.SinTheta(matrix(t, res, "U").M, g.Truth["U"])
			require.NoError(t, err)
			errs = append(errs, f)
		}
		slices.Sort(errs)
		med := errs[1]
		t.Logf("ε = %g: ‖sin Θ‖_F %v", eps, errs)
		assert.LessOrEqual(t, med, prev+tol, fmt.Sprintf("median error at ε = %g above the one before", eps))
		prev = med
	}
}

// TestDefaultRank: rank 0 (the default) becomes each estimator's default
// rank, at most the working dimension (k′ when projected); a given rank is
// kept.
func TestDefaultRank(t *testing.T) {
	users := sdk.Shape{Kind: data.Users, N: 600, P: 20, Users: 100}
	small := users
	small.P = 6
	for _, tc := range []struct {
		name  string
		est   sdk.Estimator
		raw   map[string]string
		shape sdk.Shape
		want  int
	}{
		{"private", PrivateFedRep{}, nil, users, 2},
		{"nonprivate", NonPrivateFedRep{}, nil, users, 2},
		{"classify", Classify{}, nil, users, 9},
		{"classify, d = 6", Classify{}, nil, small, 6},
		{"classify, k′ = 4", Classify{}, map[string]string{"kprime": "4"}, users, 4},
		{"classify, rank given", Classify{}, map[string]string{"rank": "3"}, users, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, _, err := sdk.Prepare(tc.est.Info(), tc.raw, tc.shape)
			require.NoError(t, err)
			o, ok := opts.(interface{ config() *fedrepConfig })
			require.True(t, ok)
			assert.Equal(t, tc.want, o.config().rank())
		})
	}
}
