package orbit

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// The non-private reference computes U and Λ from the raw data: they must be
// labelled evaluation-only, never public (they were released as public).
func TestNonPrivateOutputsAreEvaluationOnly(t *testing.T) {
	ds := genData(t, 300, 6, 2, 3)
	for _, spectrum := range []string{"projection", "true"} {
		res, _ := run(t, NonPrivate{}, ds, map[string]string{"rank": "2", "spectrum": spectrum}, pure(1), 1)
		for _, m := range res.Matrices {
			assert.Equal(t, sdk.Evaluation, m.Release, "%s (spectrum=%s)", m.Name, spectrum)
			assert.Contains(t, m.Doc, "NOT private", m.Name)
		}
		for _, s := range res.Scalars {
			assert.Equal(t, sdk.Evaluation, s.Release, s.Name)
		}
	}
	// The private estimators still release U and Λ as public.
	res, _ := run(t, Deflation{}, ds, map[string]string{"rank": "2"}, pure(1), 1)
	assert.Equal(t, sdk.Public, matrix(t, res, "U").Release)
	assert.Equal(t, sdk.Public, matrix(t, res, "Lambda").Release)
}

// A keyword spectrum given to an estimator that does not know it names the
// accepted forms instead of miscounting values, and spends nothing.
func TestSpectrumKeywordErrorNamesTheForms(t *testing.T) {
	ds := genData(t, 200, 6, 2, 4)
	for _, est := range []sdk.Estimator{EM{}, Deflation{}, NonPrivate{}} {
		// orbit-nonprivate knows only "true", orbit-gauss only "private".
		_, acct, err := sdk.RunLocal(context.Background(), est, ds, pinned(map[string]string{"rank": "3", "spectrum": "private"}), pure(1), sdk.LocalOptions{})
		require.Error(t, err, est.Info().Name)
		assert.Contains(t, err.Error(), `want "projection" or 3 comma-separated numbers`, est.Info().Name)
		if acct != nil {
			assert.Empty(t, acct.Steps(), est.Info().Name)
		}
	}
	_, err := parseSpectrum("3,2", 3)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "lists 2 values but rank is 3")
	v, err := parseSpectrum("5", 1)
	require.NoError(t, err)
	assert.Equal(t, []float64{5}, v)
}

// Requests the orbit estimators refuse as such are marked sdk.BadRequest
// (a usage error for the host) and refused before any privacy step.
func TestRefusedRequestsAreBadRequests(t *testing.T) {
	ds := genData(t, 200, 6, 2, 5)
	cases := []struct {
		name  string
		est   sdk.Estimator
		raw   map[string]string
		grant privacy.Grant
	}{
		{"spectrum count", EM{}, map[string]string{"rank": "3", "spectrum": "3,2"}, pure(1)},
		{"spectrum increasing", EM{}, map[string]string{"rank": "2", "spectrum": "1,2"}, pure(1)},
		{"spectrum negative", Deflation{}, map[string]string{"rank": "2", "spectrum": "2,-1"}, pure(1)},
		{"spectrum keyword", EM{}, map[string]string{"rank": "2", "spectrum": "private"}, pure(1)},
		{"gauss classical above ε = 1", Gauss{}, map[string]string{"rank": "2", "noise": "classical"}, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 4, Delta: 1e-6}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, acct, err := sdk.RunLocal(context.Background(), tc.est, ds, pinned(tc.raw), tc.grant, sdk.LocalOptions{})
			require.Error(t, err)
			assert.True(t, sdk.IsBadRequest(err), "refusal not marked: %v", err)
			if acct != nil {
				assert.Empty(t, acct.Steps())
			}
		})
	}
}

// With k = d the deflation's last vector is determined by the others: it
// spends nothing, the d − 1 real draws share ε, and the frame is still
// orthonormal.
func TestDeflationFullRankSpendsOnlyOnRealDraws(t *testing.T) {
	const d = 4
	ds := genData(t, 300, d, 2, 7)
	res, acct := run(t, Deflation{}, ds, map[string]string{"rank": "4", "spectrum": "4,3,2,1"}, pure(1), 1)
	steps := acct.Steps()
	require.Len(t, steps, d-1)
	total := 0.0
	for _, st := range steps {
		assert.InDelta(t, 1.0/(d-1), st.Epsilon, 1e-12)
		total += st.Epsilon
	}
	assert.InDelta(t, 1.0, total, 1e-12, "the whole ε goes to the d − 1 draws")
	u := matrix(t, res, "U").M
	var utu mat.Dense
	utu.Mul(u.T(), u)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			want := 0.0
			if i == j {
				want = 1
			}
			assert.InDelta(t, want, utu.At(i, j), 1e-10)
		}
	}
	assert.InDelta(t, 1.0/(2*(d-1)), scalar(t, res, "beta"), 1e-12)
}
