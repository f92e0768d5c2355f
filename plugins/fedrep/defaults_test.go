package fedrep

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/evaluate"
	"github.com/dplr/dplr/engine/sdk"
)

// TestDefaultsErrorFallsWithEpsilon checks fedrep-private on the
// shared-representation task of issue 28 (5000 users × 10 rows, d = 20,
// generating rank 2): the median over three fresh-noise runs of the error
// does not grow as ε goes 1, 2, 4, 8. At rank 2 the error is ‖sin Θ‖_F
// against the generating U*; with the defaults (rank min(9, d) = 9) it is
// ‖(I − ÛÛᵀ)U*‖_F, the part of U* the released span misses. The
// tolerance, 0.001, is above the largest spread of three runs measured at
// one ε ≥ 2 (0.0008 at ε = 2, rank 2) and far below the growth that T = 5
// (the default before) shows at rank 2: medians 0.0073, 0.0039, 0.0093,
// 0.020 (bench/results/fedrep-defaults.md).
func TestDefaultsErrorFallsWithEpsilon(t *testing.T) {
	if testing.Short() {
		t.Skip("24 fits on 5000 users")
	}
	g := genUsers(t, 5000, 10, 20, 2, 0.01, 1)
	us := g.Truth["U"]
	const tol = 0.001
	for _, raw := range []map[string]string{{"rank": "2"}, nil} {
		prev := 1.0
		for _, eps := range []float64{1, 2, 4, 8} {
			var errs []float64
			for seed := uint64(1); seed <= 3; seed++ {
				res, _ := fit(t, PrivateFedRep{}, g.Data, raw, approx(eps), seed)
				u := matrix(t, res, "U").M
				var f float64
				if raw != nil {
					var err error
					_, f, err = evaluate.SinTheta(u, us)
					require.NoError(t, err)
				} else {
					var p, proj, miss mat.Dense
					p.Mul(u.T(), us)
					proj.Mul(u, &p)
					miss.Sub(us, &proj)
					f = mat.Norm(&miss, 2)
				}
				errs = append(errs, f)
			}
			slices.Sort(errs)
			med := errs[1]
			t.Logf("%v, ε = %g: error %v", raw, eps, errs)
			assert.LessOrEqual(t, med, prev+tol, fmt.Sprintf("%v: median error at ε = %g above the one before", raw, eps))
			prev = med
		}
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
		{"private", PrivateFedRep{}, nil, users, 9},
		{"nonprivate", NonPrivateFedRep{}, nil, users, 9},
		{"private, d = 6", PrivateFedRep{}, nil, small, 6},
		{"private, theory batch 4", PrivateFedRep{}, map[string]string{"mode": "theory", "batch": "4"}, users, 4},
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
