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

// δ must be small against n: δ ≥ 1/n is refused before any step unless the
// request sets allow_large_delta, and then the guarantee says so.
func TestLargeDeltaRefusedUnlessAllowed(t *testing.T) {
	rows := &data.Dataset{Kind: data.Rows, X: mat.NewDense(100, 1, nil)}
	users := &data.Dataset{Kind: data.Users, X: mat.NewDense(100, 1, nil), Y: make([]float64, 100), UserStart: []int{0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100}}
	spend := func(_ context.Context, run *Run) (*Result, error) {
		plan, err := privacy.NewPlan(run.Acct, privacy.NoiseZCDP, privacy.Share{Name: "all", Weight: 1})
		if err != nil {
			return nil, err
		}
		b, _ := plan.Budget("all")
		rel, err := run.Acct.Gaussian("v", 1, 1, b)
		if err != nil {
			return nil, err
		}
		return &Result{}, rel.Add(run.Rand, []float64{0})
	}
	approx := func(delta float64) privacy.Grant {
		return privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: delta}
	}
	cases := []struct {
		name  string
		data  *data.Dataset
		grant privacy.Grant
		raw   map[string]string
		want  string // refusal substring; "" for success
		note  bool   // the guarantee states the large δ
	}{
		{name: "small δ", data: rows, grant: approx(1e-3)},
		{name: "δ = 1/n refused", data: rows, grant: approx(0.01), want: "δ = 0.01 is not small against the 100 rows"},
		{name: "δ = 0.5 refused", data: rows, grant: approx(0.5), want: "set allow_large_delta=true"},
		{name: "explicit false", data: rows, grant: approx(0.5), raw: map[string]string{"allow_large_delta": "false"}, want: "not small"},
		{name: "allowed", data: rows, grant: approx(0.5), raw: map[string]string{"allow_large_delta": "true"}, note: true},
		{name: "users data counts users", data: users, grant: approx(0.05)},
		{name: "users data refused", data: users, grant: approx(0.1), want: "against the 10 users"},
		{name: "ρ grant has no δ", data: rows, grant: privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1}},
	}
	seed := uint64(2)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			info := Info{Name: "fake", DataKind: tc.data.Kind, Grants: []privacy.GrantKind{privacy.GrantApprox, privacy.GrantZCDP}}
			res, acct, err := RunLocal(context.Background(), fakeEst{info: info, fit: spend}, tc.data, tc.raw, tc.grant, LocalOptions{Seed: &seed})
			if tc.want != "" {
				assert.ErrorContains(t, err, tc.want)
				assert.True(t, IsBadRequest(err))
				assert.Nil(t, acct, "refused before any accountant, hence any step")
				return
			}
			require.NoError(t, err)
			txt := res.Guarantee.String()
			assert.Equal(t, tc.note, len(res.Guarantee.Assumptions) > 0, txt)
			if tc.note {
				assert.Contains(t, txt, "permits publishing one person's data outright")
				assert.Contains(t, res.Warnings[0], "allow_large_delta=true")
			}
		})
	}

	// The host can run the same check before reserving anything.
	info := Info{Name: "fake", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantApprox}}
	_, err := CheckGrant(info, nil, ShapeOf(rows), approx(0.5))
	assert.True(t, IsBadRequest(err))
	_, err = CheckGrant(info, map[string]string{"allow_large_delta": "maybe"}, ShapeOf(rows), approx(0.5))
	assert.ErrorContains(t, err, `"maybe" is not true or false`)
	info.NonPrivate = true
	note, err := CheckGrant(info, nil, ShapeOf(rows), approx(0.5))
	assert.NoError(t, err, "a non-private reference spends no δ")
	assert.Empty(t, note)
}
