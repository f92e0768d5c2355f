package fedrep

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/evaluate"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// genUsers draws a users-lowrank data set.
func genUsers(t testing.TB, n, m, d, k int, noise float64, seed uint64) *gen.Generated {
	t.Helper()
	mod, err := gen.Lookup(gen.UsersLowRankName)
	require.NoError(t, err)
	g, err := gen.Run(mod, map[string]string{"users": fmt.Sprint(n), "samples": fmt.Sprint(m), "dim": fmt.Sprint(d),
		"rank": fmt.Sprint(k), "noise": fmt.Sprint(noise)}, seed)
	require.NoError(t, err)
	return g
}

func approx(eps float64) privacy.Grant {
	return privacy.Grant{Kind: privacy.GrantApprox, Epsilon: eps, Delta: 1e-6}
}

// fit runs est locally with a fixed seed.
func fit(t testing.TB, est sdk.Estimator, ds *data.Dataset, raw map[string]string, g privacy.Grant, seed uint64) (*sdk.Result, *privacy.Accountant) {
	t.Helper()
	res, acct, err := sdk.RunLocal(context.Background(), est, ds, raw, g, sdk.LocalOptions{Seed: &seed})
	require.NoError(t, err)
	return res, acct
}

func matrix(t testing.TB, res *sdk.Result, name string) *sdk.Matrix {
	t.Helper()
	for i := range res.Matrices {
		if res.Matrices[i].Name == name {
			return &res.Matrices[i]
		}
	}
	t.Fatalf("no matrix %q", name)
	return nil
}

func scalar(t testing.TB, res *sdk.Result, name string) float64 {
	t.Helper()
	for _, s := range res.Scalars {
		if s.Name == name {
			return s.Value
		}
	}
	t.Fatalf("no scalar %q", name)
	return 0
}

// testLayout is the per-user split of ds (the exact classifier's).
func testLayout(t testing.TB, ds *data.Dataset, localFrac float64) *layout {
	t.Helper()
	lay, err := newLayout(ds, localFrac, 0)
	require.NoError(t, err)
	return lay
}

// testUsers reaches ds through the in-process users passes with the local
// fraction, rank k, clip psi (+Inf: none) and the loss; the heads are
// fitted on every non-hold-out row.
func testUsers(t testing.TB, ds *data.Dataset, localFrac float64, k int, psi float64, loss lossKind) *usersData {
	t.Helper()
	ud, err := newUsersData(ds, &splitOptions{LocalFraction: localFrac, HeadData: "all"}, nil, nil, loss)
	require.NoError(t, err)
	ud.k, ud.psi = k, psi
	return ud
}

// allUsers is the index list 0, …, n−1.
func allUsers(n int) []int32 {
	users := make([]int32, n)
	for i := range users {
		users[i] = int32(i)
	}
	return users
}

var be = backend.Default()

func runLocal(est sdk.Estimator, g *gen.Generated, seed *uint64) (*sdk.Result, *privacy.Accountant, error) {
	return sdk.RunLocal(context.Background(), est, g.Data, nil, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1}, sdk.LocalOptions{Seed: seed})
}

// subspaceDist is ‖sin Θ(a, b)‖₂, the paper's subspace distance, from the
// one metric package.
func subspaceDist(t testing.TB, a, b mat.Matrix) float64 {
	t.Helper()
	s, _, err := evaluate.SinTheta(a, b)
	require.NoError(t, err)
	return s
}
