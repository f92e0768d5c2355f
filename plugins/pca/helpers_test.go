package pca

import (
	"math"

	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// spiked draws a spiked-model data set.
func spiked(t testing.TB, n, p, r int, lambda string, noise string, seed uint64) *gen.Generated {
	t.Helper()
	m, err := gen.Lookup("spiked")
	require.NoError(t, err)
	g, err := gen.Run(m, map[string]string{
		"n": fmt.Sprint(n), "p": fmt.Sprint(p), "rank": fmt.Sprint(r), "lambda": lambda, "sigma2": "1", "noise": noise,
	}, seed)
	require.NoError(t, err)
	return g
}

// uncentred returns raw with center=none for pca-analyze-gauss and
// pca-amin when it names no centring: the tests written for the spiked
// model (mean zero) check the uncentred path unless they say otherwise;
// the default, center=private, has its own tests.
func uncentred(est sdk.Estimator, raw map[string]string) map[string]string {
	switch est.(type) {
	case AnalyzeGauss, Amin, CXZ:
	default:
		return raw
	}
	if _, ok := raw["center"]; ok {
		return raw
	}
	return with(raw, "center", "none")
}

func fit(t testing.TB, est sdk.Estimator, g *gen.Generated, raw map[string]string, grant privacy.Grant, seed uint64) (*sdk.Result, *privacy.Accountant) {
	t.Helper()
	res, acct, err := sdk.RunLocal(context.Background(), est, g.Data, uncentred(est, raw), grant, sdk.LocalOptions{Seed: &seed})
	require.NoError(t, err)
	return res, acct
}

func matrix(t testing.TB, res *sdk.Result, name string) *mat.Dense {
	t.Helper()
	for _, m := range res.Matrices {
		if m.Name == name {
			return m.M
		}
	}
	t.Fatalf("no matrix %q", name)
	return nil
}

func series(t testing.TB, res *sdk.Result, name string) []float64 {
	t.Helper()
	for _, s := range res.Series {
		if s.Name == name {
			return s.Values
		}
	}
	t.Fatalf("no series %q", name)
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

func approx(eps, delta float64) privacy.Grant {
	return privacy.Grant{Kind: privacy.GrantApprox, Epsilon: eps, Delta: delta}
}

func zcdp(rho float64) privacy.Grant { return privacy.Grant{Kind: privacy.GrantZCDP, Rho: rho} }

func pure(eps float64) privacy.Grant { return privacy.Grant{Kind: privacy.GrantPure, Epsilon: eps} }

// maxAbsOffIdentity returns max |UᵀU − I|.
func maxAbsOffIdentity(u *mat.Dense) float64 {
	_, r := u.Dims()
	var m mat.Dense
	m.Mul(u.T(), u)
	var out float64
	for i := 0; i < r; i++ {
		for j := 0; j < r; j++ {
			v := m.At(i, j)
			if i == j {
				v--
			}
			if v < 0 {
				v = -v
			}
			out = max(out, v)
		}
	}
	return out
}

func isSymmetric(m *mat.Dense) bool {
	n, c := m.Dims()
	if n != c {
		return false
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if m.At(i, j) != m.At(j, i) {
				return false
			}
		}
	}
	return true
}

// norm is the Euclidean norm of v.
func norm(v []float64) float64 {
	var s float64
	for _, a := range v {
		s += a * a
	}
	return math.Sqrt(s)
}
