package sdk

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
)

type declaringOptions struct {
	Auto bool `param:"auto" default:"false" doc:"use a private quantile"`
	Mode string
}

func (o *declaringOptions) Mechanisms(s Shape, g privacy.Grant) ([]MechanismUse, error) {
	switch o.Mode {
	case "panic":
		panic("boom")
	case "error":
		return nil, errors.New("no plan for this shape")
	case "unknown":
		return []MechanismUse{{Mechanism: "quantum"}}, nil
	}
	uses := []MechanismUse{{Mechanism: privacy.MechGaussian, For: "moment"}}
	if o.Auto {
		uses = append(uses, MechanismUse{Mechanism: privacy.MechExponential, For: "clip quantile"},
			MechanismUse{Mechanism: privacy.MechGaussian, For: "mean"}, MechanismUse{Mechanism: privacy.MechGaussian, For: "moment"})
	}
	return uses, nil
}

type evaluateOnly struct {
	Eval bool `param:"evaluate2" default:"false" doc:"evaluate"`
}

var approx = privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}

func TestDeclareMergesAndSorts(t *testing.T) {
	info := Info{Name: "d", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantApprox}, Options: declaringOptions{}}
	_, _, d, err := PrepareDeclared(info, map[string]string{"auto": "true"}, Shape{Kind: data.Rows, N: 10, P: 2}, approx)
	require.NoError(t, err)
	assert.True(t, d.Declared)
	assert.Equal(t, []MechanismUse{{privacy.MechExponential, "clip quantile"}, {privacy.MechGaussian, "moment; mean"}}, d.Uses)
	assert.Equal(t, []privacy.Mechanism{privacy.MechExponential, privacy.MechGaussian}, d.Mechanisms())
	assert.False(t, d.GaussianOnly())
	assert.True(t, d.Allows(privacy.MechExponential))
	assert.False(t, d.Allows(privacy.MechLaplace))
	assert.Equal(t, "exponential (clip quantile), gaussian (moment; mean)", d.String())
	err = d.CheckSteps([]privacy.Step{{Name: "m", Mechanism: privacy.MechGaussian}, {Name: "eigenvalues", Mechanism: privacy.MechLaplace}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `privacy step 2 ("eigenvalues") uses the laplace mechanism`)

	_, _, d, err = PrepareDeclared(info, nil, Shape{Kind: data.Rows, N: 10, P: 2}, approx)
	require.NoError(t, err)
	assert.True(t, d.GaussianOnly())

	// An OptionSet merges its members' declarations; a member without the
	// hook declares nothing.
	set := info
	set.Options = OptionSet{declaringOptions{}, evaluateOnly{}}
	_, _, d, err = PrepareDeclared(set, map[string]string{"auto": "true"}, Shape{Kind: data.Rows}, approx)
	require.NoError(t, err)
	assert.Equal(t, []privacy.Mechanism{privacy.MechExponential, privacy.MechGaussian}, d.Mechanisms())
}

func TestDeclareUndeclaredAndNonPrivate(t *testing.T) {
	info := Info{Name: "u", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantApprox}, Options: evaluateOnly{}}
	_, _, d, err := PrepareDeclared(info, nil, Shape{Kind: data.Rows}, approx)
	require.NoError(t, err)
	assert.False(t, d.Declared)
	assert.True(t, d.Allows(privacy.MechLaplace), "undeclared: every step allowed, as before")
	assert.NoError(t, d.CheckSteps([]privacy.Step{{Mechanism: privacy.MechLaplace}}))
	assert.False(t, d.GaussianOnly())
	assert.Equal(t, "undeclared", d.String())

	info.NonPrivate = true
	_, _, d, err = PrepareDeclared(info, nil, Shape{Kind: data.Rows}, approx)
	require.NoError(t, err)
	assert.True(t, d.Declared)
	assert.Empty(t, d.Uses)
	assert.Equal(t, "no privacy mechanism", d.String())
}

func TestDeclareRefusals(t *testing.T) {
	for mode, want := range map[string]string{
		"panic":   "options hook panicked: boom",
		"error":   "no plan for this shape",
		"unknown": `unknown privacy mechanism "quantum"`,
	} {
		t.Run(mode, func(t *testing.T) {
			_, err := Declare(Info{Name: "d"}, &declaringOptions{Mode: mode}, Shape{}, approx)
			require.Error(t, err)
			assert.True(t, IsBadRequest(err))
			assert.Contains(t, err.Error(), want)
		})
	}
}

func TestUsesOfShares(t *testing.T) {
	got := UsesOf(privacy.Share{Name: "clip", Mechanism: privacy.MechExponential}, privacy.Share{Name: "free"},
		privacy.Share{Name: "moment", Mechanism: privacy.MechGaussian})
	assert.Equal(t, []MechanismUse{{privacy.MechExponential, "clip"}, {privacy.MechGaussian, "moment"}}, got)
}
