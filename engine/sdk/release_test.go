package sdk

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
)

func TestReleaseClasses(t *testing.T) {
	for _, r := range Releases {
		assert.True(t, r.Valid(), r)
		assert.Equal(t, r == Public, r.Note() == "", r)
	}
	assert.False(t, Release("").Valid())
	assert.Contains(t, Release("secret").Note(), "NOT private")
	assert.Equal(t, Diagnostic, TimingRelease)

	cases := []struct {
		name string
		res  Result
		want string
	}{
		{"labelled", Result{Matrices: []Matrix{{Name: "U", Release: Public}}, Scalars: []Scalar{{Name: "U", Release: Evaluation}}}, ""},
		{"unlabelled matrix", Result{Matrices: []Matrix{{Name: "U"}}}, `matrix output "U" has release class ""`},
		{"unknown series class", Result{Series: []Series{{Name: "trace", Release: "open"}}}, `release class "open"`},
		{"duplicate scalar", Result{Scalars: []Scalar{{Name: "s", Release: Public}, {Name: "s", Release: Public}}}, `"s" is used twice`},
		{"timing shadowing a scalar", Result{Scalars: []Scalar{{Name: "fit_s", Release: Public}}, Timings: []Timing{{Name: "fit_s"}}}, "used twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.res.CheckReleases()
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// Timings depend on the data: they reach the host as Diagnostic scalars,
// never Public, and an unlabelled output fails the fit.
func TestTimingsAreNeverPublic(t *testing.T) {
	rows := &data.Dataset{Kind: data.Rows, X: mat.NewDense(10, 1, nil)}
	info := Info{Name: "fake", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantZCDP}}
	fit := func(unlabelled bool) func(context.Context, *Run) (*Result, error) {
		return func(_ context.Context, run *Run) (*Result, error) {
			rel, err := run.Acct.Gaussian("v", 1, 1, privacy.Budget{Noise: privacy.NoiseZCDP, Rho: 0.5})
			if err != nil {
				return nil, err
			}
			v := []float64{0}
			if err := rel.Add(run.Rand, v); err != nil {
				return nil, err
			}
			res := &Result{}
			res.AddScalar("v", v[0], Public, "noisy zero")
			res.AddTiming("sampler_s", 0.25, "time spent sampling")
			if unlabelled {
				res.AddScalar("w", 1, "", "no class")
			}
			return res, nil
		}
	}
	seed := uint64(4)
	grant := privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1}
	res, acct, err := RunLocal(context.Background(), fakeEst{info: info, fit: fit(false)}, rows, nil, grant, LocalOptions{Seed: &seed})
	require.NoError(t, err)
	require.NotNil(t, acct)
	require.Len(t, res.Timings, 1, "timings travel apart from the scalars (the transport sends them as Diagnostic)")
	require.Len(t, res.Scalars, 1)

	_, _, err = RunLocal(context.Background(), fakeEst{info: info, fit: fit(true)}, rows, nil, grant, LocalOptions{Seed: &seed})
	assert.ErrorContains(t, err, `scalar output "w" has release class ""`)
}

func TestNotesCarryTheirReleaseClass(t *testing.T) {
	var res Result
	res.AddNote("all noisy eigenvalues clamped to 0", Public)
	res.AddNote("3 of 100 rows were clipped", Diagnostic)
	assert.Equal(t, []string{
		"all noisy eigenvalues clamped to 0",
		"[diagnostic: depends on the private data, NOT private; for the operator only] 3 of 100 rows were clipped",
	}, res.Notes)
}
