package fedrep

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// shrinkUser returns a copy of ds in which user u keeps only its first
// rows rows: a user-level neighbour of ds (user u's whole data replaced by
// a smaller data set), with the same number of users.
func shrinkUser(t testing.TB, ds *data.Dataset, u, rows int) *data.Dataset {
	t.Helper()
	_, d := ds.X.Dims()
	var xs []float64
	var ys []float64
	start := []int{0}
	for i := 0; i < ds.NumUsers(); i++ {
		s, e := ds.UserStart[i], ds.UserStart[i+1]
		if i == u {
			e = s + rows
		}
		for r := s; r < e; r++ {
			xs = append(xs, ds.X.RawRowView(r)...)
			ys = append(ys, ds.Y[r])
		}
		start = append(start, len(ys))
	}
	out := &data.Dataset{Kind: data.Users, X: mat.NewDense(len(ys), d, xs), Y: ys, UserStart: start, UserIDs: ds.UserIDs}
	require.NoError(t, out.Validate())
	return out
}

// signed returns a copy of ds with labels sign(y) ∈ {±1}.
func signed(ds *data.Dataset) *data.Dataset {
	out := *ds
	out.Y = make([]float64, len(ds.Y))
	for i, v := range ds.Y {
		out.Y[i] = 1
		if v < 0 {
			out.Y[i] = -1
		}
	}
	return &out
}

// Whether a request runs or is refused, and what the refusal says, must not
// depend on private data: under user-level neighbours every user's row
// count and every response are private, so a default or a refusal computed
// from them (the old theory-mode batch ⌊min training rows / 2T⌋ and its
// "the smallest training half has N rows" refusal, a ±1 label check that
// printed the offending response) is a free, repeatable distinguisher. Each
// case runs on a data set and on a neighbour that differs in one user only
// (fewer rows, or one label that is not ±1), and must have the same outcome.
func TestOutcomeDoesNotDependOnPrivateData(t *testing.T) {
	g := genUsers(t, 40, 40, 6, 2, 0.01, 11)
	reg := g.Data
	few := shrinkUser(t, reg, 3, 4) // user 3: 4 rows instead of 40
	cls := signed(reg)
	clsFew := shrinkUser(t, cls, 3, 4)
	odd := signed(reg)
	odd.Y = append([]float64(nil), odd.Y...)
	odd.Y[reg.UserStart[3]] = 0.5 // one response of user 3 that is not ±1
	cases := []struct {
		name string
		est  sdk.Estimator
		a, b *data.Dataset
		raw  map[string]string
	}{
		{"private theory, no batch", PrivateFedRep{}, reg, few, map[string]string{"mode": "theory"}},
		{"private theory, batch 2", PrivateFedRep{}, reg, few, map[string]string{"mode": "theory", "batch": "2"}},
		{"private theory, batch 1 < rank", PrivateFedRep{}, reg, few, map[string]string{"mode": "theory", "batch": "1"}},
		{"private experiment", PrivateFedRep{}, reg, few, nil},
		{"nonprivate theory, no batch", NonPrivateFedRep{}, reg, few, map[string]string{"mode": "theory"}},
		{"nonprivate theory, batch 2", NonPrivateFedRep{}, reg, few, map[string]string{"mode": "theory", "batch": "2"}},
		{"classify theory, batch 2", Classify{}, cls, clsFew, map[string]string{"mode": "theory", "batch": "2"}},
		{"classify theory, no batch", Classify{}, cls, clsFew, map[string]string{"mode": "theory"}},
		{"classify, a label that is not ±1", Classify{}, cls, odd, nil},
		{"classify-exact, a label that is not ±1", ClassifyExact{}, cls, odd, nil},
		{"classify-exact, few rows", ClassifyExact{}, cls, clsFew, nil},
		{"private selection", PrivateFedRep{}, reg, few, map[string]string{"select": "rank=1,2", "iterations": "2"}},
		{"private selection, rank above d", PrivateFedRep{}, reg, few, map[string]string{"select": "rank=1,7"}},
		{"privaltmin, few rows", PrivAltMin{}, reg, few, nil},
		{"privaltmin all groups, few rows", PrivAltMin{}, reg, few, map[string]string{"groups": "all"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			seed := uint64(5)
			_, accA, errA := sdk.RunLocal(context.Background(), tc.est, tc.a, tc.raw, approx(1), sdk.LocalOptions{Seed: &seed})
			_, accB, errB := sdk.RunLocal(context.Background(), tc.est, tc.b, tc.raw, approx(1), sdk.LocalOptions{Seed: &seed})
			require.Equal(t, errA == nil, errB == nil, "outcome differs between neighbours: %v / %v", errA, errB)
			if errA != nil {
				assert.Equal(t, errA.Error(), errB.Error(), "the refusal text depends on private data")
				assert.True(t, sdk.IsBadRequest(errA), "a refusal decided from public quantities is a bad request: %v", errA)
				return
			}
			assert.Equal(t, publicSteps(accA.Steps()), publicSteps(accB.Steps()), "the privacy steps depend on private data")
		})
	}
}

// publicSteps is what a plan fixes of each step before the data are read:
// its name, mechanism, calibration, budget and dimension. A step's
// sensitivity and noise scale may follow a released value (a privately
// chosen clip), which differs between neighbours like any release.
func publicSteps(steps []privacy.Step) []privacy.Step {
	out := make([]privacy.Step, len(steps))
	for i, s := range steps {
		out[i] = privacy.Step{Name: s.Name, Mechanism: s.Mechanism, Calibration: s.Calibration, Epsilon: s.Epsilon, Delta: s.Delta, Rho: s.Rho, Dim: s.Dim}
	}
	return out
}

// Theory mode: with the same seed of the users' row orders, the round-t sum of clipped gradients
// moves by at most 2ψ when one user's data is replaced by a smaller data
// set that cannot feed every round (the user then contributes zero), so
// the mean moves by at most 2ψ/n, whatever the round.
func TestTheoryModeSensitivityWithShortUsers(t *testing.T) {
	g := genUsers(t, 30, 40, 5, 2, 0.5, 12)
	few := shrinkUser(t, g.Data, 7, 9) // training half 4 or 5 rows: feeds round 0 only with b = 2
	const psi, b, T = 0.05, 2, 5
	u0, err := orthonormalize(be, mat.NewDense(5, 2, []float64{1, 0.2, 0, 1, 0.3, 0, 0, 0.4, 0.1, 0.1}))
	require.NoError(t, err)
	var engs [2]*usersData
	for i, ds := range []*data.Dataset{g.Data, few} {
		engs[i] = testUsers(t, ds, 0.5, 2, psi, lossSquared)
		engs[i].theory(b, 12345)
	}
	for r := 0; r < T; r++ {
		s1, _, err := engs[0].aggregate(context.Background(), u0.RawMatrix().Data, r)
		require.NoError(t, err)
		s2, _, err := engs[1].aggregate(context.Background(), u0.RawMatrix().Data, r)
		require.NoError(t, err)
		var diff float64
		for i := range s1 {
			diff += (s1[i] - s2[i]) * (s1[i] - s2[i])
		}
		assert.LessOrEqual(t, math.Sqrt(diff), 2*psi*(1+1e-12), "round %d", r)
		if r > 0 {
			assert.Equal(t, 1, engs[1].skipped(), "round %d: the short user sits out", r)
			assert.Equal(t, 0, engs[0].skipped())
		}
	}
}

// Priv-AltMin's ridge is in public units (rows per user bound × group
// size): replacing one user by one with fewer rows, all of them zero (so
// the released statistics are the same), leaves the output bit-identical.
// It used to scale the ridge by the users' actual row counts.
func TestAltMinRidgeUsesPublicCounts(t *testing.T) {
	g := genUsers(t, 40, 10, 4, 2, 0.01, 13)
	ds := g.Data
	// User 5 holds only zero rows: it contributes nothing to A, b or the
	// initialization, whatever its row count.
	zero := func(ds *data.Dataset) *data.Dataset {
		x := mat.DenseCopyOf(ds.X)
		for r := ds.UserStart[5]; r < ds.UserStart[6]; r++ {
			for c := 0; c < x.RawMatrix().Cols; c++ {
				x.Set(r, c, 0)
			}
		}
		out := *ds
		out.X = x
		return &out
	}
	a := zero(ds)
	b := zero(shrinkUser(t, ds, 5, 2))
	for _, groups := range []string{"disjoint", "all"} {
		raw := map[string]string{"clip_w": "1", "clip_y": "1", "groups": groups, "output_v": "false"}
		ra, _ := fit(t, PrivAltMin{}, a, raw, privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1e6}, 3)
		rb, _ := fit(t, PrivAltMin{}, b, raw, privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1e6}, 3)
		assert.True(t, mat.Equal(matrix(t, ra, "U").M, matrix(t, rb, "U").M), "groups=%s: U depends on a private row count", groups)
	}
}

// noise= replaced calibration=: a request with the old name is refused
// before any step, with an error naming noise= and its values.
func TestCalibrationRenamedNoise(t *testing.T) {
	g := genUsers(t, 200, 10, 6, 2, 0.01, 14)
	for _, tc := range []struct {
		est  sdk.Estimator
		raw  map[string]string
		want string
	}{
		{PrivateFedRep{}, map[string]string{"iterations": "3", "calibration": "paper"}, "calibration= was renamed noise= (values: exact, zcdp, paper)"},
		{PrivAltMin{}, map[string]string{"iterations": "3", "clip_w": "1", "clip_y": "1", "calibration": "zcdp"}, "calibration= was renamed noise= (values: exact, zcdp, paper)"},
		{Classify{}, map[string]string{"iterations": "3", "calibration": "exact"}, "calibration= was renamed noise= (values: exact, zcdp)"},
	} {
		_, acct, err := sdk.RunLocal(context.Background(), tc.est, g.Data, tc.raw, approx(1), sdk.LocalOptions{})
		require.Error(t, err)
		assert.ErrorContains(t, err, tc.want)
		assert.True(t, sdk.IsBadRequest(err), "%v", err)
		if acct != nil {
			assert.Empty(t, acct.Steps())
		}
	}
}

// Every release a fit declares is drawn, once: no declared step is left
// without its noise (the disjoint-group loop of Priv-AltMin is one release
// per statistic, drawn in one part per group).
func TestEveryDeclaredReleaseIsDrawn(t *testing.T) {
	g := genUsers(t, 60, 10, 4, 1, 0.01, 15)
	cls := signed(g.Data)
	for _, tc := range []struct {
		name string
		est  sdk.Estimator
		ds   *data.Dataset
		raw  map[string]string
		gr   privacy.Grant
	}{
		{"private", PrivateFedRep{}, g.Data, map[string]string{"rank": "1", "iterations": "3"}, approx(1)},
		{"private paper", PrivateFedRep{}, g.Data, map[string]string{"rank": "1", "iterations": "3", "noise": "paper", "clip": "1"}, approx(4)},
		{"private theory", PrivateFedRep{}, g.Data, map[string]string{"rank": "1", "iterations": "2", "mode": "theory", "batch": "1"}, privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1}},
		{"altmin all", PrivAltMin{}, g.Data, map[string]string{"rank": "1", "iterations": "3", "groups": "all"}, approx(1)},
		{"altmin disjoint", PrivAltMin{}, g.Data, map[string]string{"rank": "1", "iterations": "3"}, approx(1)},
		{"classify", Classify{}, cls, map[string]string{"rank": "1", "iterations": "2"}, approx(1)},
		{"classify-exact pure", ClassifyExact{}, cls, nil, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1}},
		{"classify-exact zcdp", ClassifyExact{}, cls, nil, privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, acct := fit(t, tc.est, tc.ds, tc.raw, tc.gr, 7)
			assert.Empty(t, acct.Undrawn())
			assert.NotEmpty(t, acct.Steps())
		})
	}
}
