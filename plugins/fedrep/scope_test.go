package fedrep

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

func hasAssumption(g privacy.Guarantee, sub string) bool {
	for _, a := range g.Assumptions {
		if strings.Contains(a, sub) {
			return true
		}
	}
	return false
}

// Every private estimator that returns the per-user heads V says in its
// guarantee that V goes per user and what covers it; without V it does not.
func TestGuaranteeStatesPerUserV(t *testing.T) {
	g := genUsers(t, 60, 10, 4, 1, 0.01, 3)
	cls := genUsers(t, 60, 10, 3, 1, 0.01, 4)
	for i, y := range cls.Data.Y {
		if y >= 0 {
			cls.Data.Y[i] = 1
		} else {
			cls.Data.Y[i] = -1
		}
	}
	for _, tc := range []struct {
		est   sdk.Estimator
		ds    *data.Dataset
		raw   map[string]string
		grant privacy.Grant
	}{
		{PrivateFedRep{}, g.Data, map[string]string{"rank": "1"}, approx(1)},
		{PrivAltMin{}, g.Data, map[string]string{"rank": "1", "iterations": "2"}, approx(1)},
		{Classify{}, cls.Data, map[string]string{"rank": "1"}, approx(1)},
		{ClassifyExact{}, cls.Data, map[string]string{"kprime": "2", "net_step": "0.5"}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1}},
	} {
		name := tc.est.Info().Name
		res, _ := fit(t, tc.est, tc.ds, tc.raw, tc.grant, 1)
		assert.True(t, hasAssumption(res.Guarantee, "V is released per user"), name)
		assert.Contains(t, res.Guarantee.String(), "billboard", name)
		without := map[string]string{"output_v": "false"}
		for k, v := range tc.raw {
			without[k] = v
		}
		res, _ = fit(t, tc.est, tc.ds, without, tc.grant, 1)
		assert.False(t, hasAssumption(res.Guarantee, "V is released per user"), name)
	}
}

// Priv-AltMin mentions a group partition only when it uses one.
func TestAltMinPartitionAssumptionOnlyForDisjointGroups(t *testing.T) {
	g := genUsers(t, 60, 10, 4, 1, 0.01, 5)
	res, _ := fit(t, PrivAltMin{}, g.Data, map[string]string{"rank": "1", "iterations": "2", "groups": "disjoint"}, approx(1), 1)
	assert.True(t, hasAssumption(res.Guarantee, "group partition"))
	res, _ = fit(t, PrivAltMin{}, g.Data, map[string]string{"rank": "1", "iterations": "2", "groups": "all"}, approx(1), 1)
	assert.False(t, hasAssumption(res.Guarantee, "group partition"))
}

// A user's row count never stops a layout (it is private under user-level
// neighbours): a one-row user gets a one-row training half.
func TestLayoutNeverRefusesAUser(t *testing.T) {
	ds := &data.Dataset{Kind: data.Users, X: mat.NewDense(3, 2, []float64{1, 2, 3, 4, 5, 6}), Y: []float64{1, 2, 3},
		UserStart: []int{0, 2, 3}, UserIDs: []int64{41, 97}}
	lay, err := newLayout(ds, 0.5, 0)
	require.NoError(t, err)
	assert.Equal(t, userRows{t0: 2, t1: 3, f1: 3, h1: 3}, lay.users[1])
}

// With output_v, every private estimator also returns the id of the user
// each row of V belongs to, labelled per-user like V.
func TestHeadsComeWithTheirUserIDs(t *testing.T) {
	g := genUsers(t, 40, 10, 4, 1, 0.01, 6)
	ids := make([]int64, g.Data.NumUsers())
	for i := range ids {
		ids[i] = int64(1000 + 7*i) // not the row positions
	}
	g.Data.UserIDs = ids
	for _, tc := range []struct {
		est sdk.Estimator
		raw map[string]string
	}{
		{PrivateFedRep{}, map[string]string{"rank": "1"}},
		{PrivAltMin{}, map[string]string{"rank": "1", "iterations": "2"}},
	} {
		res, _ := fit(t, tc.est, g.Data, tc.raw, approx(1), 1)
		v, u := matrix(t, res, "V"), matrix(t, res, "V_user_ids")
		assert.Equal(t, sdk.PerUser, u.Release)
		rv, _ := v.M.Dims()
		ru, cu := u.M.Dims()
		require.Equal(t, rv, ru)
		require.Equal(t, 1, cu)
		for i, id := range ids {
			assert.Equal(t, float64(id), u.M.At(i, 0))
		}
	}
	res, _ := fit(t, PrivateFedRep{}, g.Data, map[string]string{"rank": "1", "output_v": "false"}, approx(1), 1)
	for _, m := range res.Matrices {
		assert.NotEqual(t, "V_user_ids", m.Name, "no ids without heads")
	}
}
