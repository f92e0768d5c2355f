package stats

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/fedrep"
)

// usersShards writes recs as three CSV shards (consecutive thirds, so a
// user's rows are spread over shards) and returns their glob and the data
// set the single-machine reader makes of the whole file.
func usersShards(t *testing.T, recs []urec, d int) (string, *data.Dataset) {
	t.Helper()
	dir := t.TempDir()
	third := len(recs) / 3
	for i, part := range [][]urec{recs[:third], recs[third : 2*third], recs[2*third:]} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("u-%d.csv", i)), []byte(usersCSV(part, d)), 0o644))
	}
	whole := filepath.Join(t.TempDir(), "whole.csv")
	require.NoError(t, os.WriteFile(whole, []byte(usersCSV(recs, d)), 0o644))
	ds, err := dataio.Load(whole, dataio.LoadOptions{Kind: data.Users})
	require.NoError(t, err)
	return filepath.Join(dir, "u-*.csv"), ds
}

// groupMask marks every third user.
func groupMask(n int) []float64 {
	m := make([]float64, n)
	for i := 0; i < n; i += 3 {
		m[i] = 1
	}
	return m
}

// usersBeamPasser runs every pass as a users pipeline on prism.
type usersBeamPasser struct {
	glob  string
	shape *data.Remote
	runs  int
}

// Pass implements data.Passer.
func (b *usersBeamPasser) Pass(ctx context.Context, req data.PassRequest) (*data.PassResult, error) {
	b.runs++
	fn, ok := UsersPasses[req.Kind]
	if !ok {
		return nil, fmt.Errorf("no pipeline for %s", req.Kind)
	}
	return fn(ctx, b.glob, b.shape, ReadOptions{}, req, Options{})
}

// TestUsersPassMatchesLocal: on prism, every users pass over shards equals
// pass.Local on the single-machine data set to 1e-12 relative (counts
// exactly), the heavy user included.
func TestUsersPassMatchesLocal(t *testing.T) {
	const d, k = 4, 2
	glob, ds := usersShards(t, usersData(24, d, 5), d)
	shape := pass.ShapeOf(ds)
	u := []float64{0.6, 0, 0, 0.8, 0.8, 0, 0, -0.6}
	var edges []float64
	for j := -40; j <= 40; j++ {
		edges = append(edges, math.Exp2(float64(j)))
	}
	half := make([]float64, shape.Users)
	for i := 0; i < shape.Users; i += 2 {
		half[i] = 1
	}
	base := pass.UsersData{LocalFraction: 0.25, Holdout: 0.2}
	halfBase := base
	halfBase.Group = half
	model := pass.UsersModel{U: u, Rank: k}
	altmin := base
	altmin.Group = groupMask(shape.Users)
	signs := base
	signs.Sign = true
	for _, req := range []data.PassRequest{
		pass.UsersUstatKind.EncodeRequest(shape, pass.UstatRequest{UsersData: base, Clip: 0.5}),
		pass.UsersUstatKind.EncodeRequest(shape, pass.UstatRequest{UsersData: halfBase, Clip: 0.5}),
		pass.UsersUstatHistKind.EncodeRequest(shape, pass.UstatHistRequest{UsersData: base, Edges: edges}),
		pass.UsersGradientKind.EncodeRequest(shape, pass.UsersGradientRequest{UsersData: base, UsersModel: model, Clip: 1}),
		pass.UsersGradientKind.EncodeRequest(shape, pass.UsersGradientRequest{UsersData: base, UsersModel: model, Clip: 1,
			UsersRounds: pass.UsersRounds{Batch: 1, Round: 0, Seed: 77}}),
		pass.UsersGradientHistKind.EncodeRequest(shape, pass.GradientHistRequest{UsersData: base, UsersModel: model, Edges: edges}),
		pass.UsersAltMinKind.EncodeRequest(shape, pass.AltMinRequest{UsersData: altmin, UsersModel: model, ClipW: 0.7, ClipY: 3, Portion: 4}),
		pass.UsersHoldoutKind.EncodeRequest(shape, pass.HoldoutRequest{UsersData: signs, UsersModel: pass.UsersModel{U: u, Rank: k, Logistic: true}}),
		pass.UsersValidationKind.EncodeRequest(shape, pass.ValidationRequest{UsersData: halfBase, UsersModel: model, HeadAll: true}),
	} {
		t.Run(req.Kind, func(t *testing.T) {
			got, err := RunUsersPass(context.Background(), glob, shape, ReadOptions{}, req, Options{})
			require.NoError(t, err)
			want, err := pass.Local(ds).Pass(context.Background(), req)
			require.NoError(t, err)
			assert.Equal(t, want.Records, got.Records)
			require.Len(t, got.Outputs, len(want.Outputs))
			for i, w := range want.Outputs {
				rel := relVec(got.Outputs[i].Data, w.Data)
				t.Logf("%s %s: relative difference %.3g", req.Kind, w.Name, rel)
				assert.Less(t, rel, 1e-12)
			}
			for name, w := range want.Scalars {
				assert.InDelta(t, w, got.Scalars[name], 1e-12*math.Max(1, math.Abs(w)), name)
			}
		})
	}
	_, err := RunUsersPass(context.Background(), glob, shape, ReadOptions{}, pass.UsersHoldoutKind.EncodeRequest(shape, pass.HoldoutRequest{UsersData: base, UsersModel: model, Heads: true}), Options{})
	assert.ErrorContains(t, err, "per-user heads")
}

// TestFedRepThroughBeam: fedrep-private (also in theory mode and with the
// private selection) and fedrep-privaltmin on prism through the users
// passes take the in-process fit's privacy steps and, with the same seed,
// release its U (to 1e-12 relative).
func TestFedRepThroughBeam(t *testing.T) {
	const d = 4
	glob, ds := usersShards(t, usersData(30, d, 8), d)
	shape := pass.ShapeOf(ds)
	grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 2, Delta: 1e-6}
	for _, tc := range []struct {
		name string
		est  sdk.Estimator
		raw  map[string]string
	}{
		{"fedrep-private", fedrep.PrivateFedRep{}, map[string]string{"iterations": "2", "rank": "2", "output_v": "false", "holdout": "0.2"}},
		{"fedrep-privaltmin", fedrep.PrivAltMin{}, map[string]string{"iterations": "2", "rank": "2", "output_v": "false", "clip_w": "1", "clip_y": "3"}},
		{"fedrep-private theory", fedrep.PrivateFedRep{}, map[string]string{"iterations": "2", "rank": "2", "output_v": "false", "mode": "theory", "batch": "2", "clip": "1", "init_clip": "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed := uint64(3)
			local, lacct, err := sdk.RunLocal(context.Background(), tc.est, ds, tc.raw, grant, sdk.LocalOptions{Seed: &seed})
			require.NoError(t, err)
			bp := &usersBeamPasser{glob: glob, shape: shape}
			remote, racct, err := sdk.RunLocal(context.Background(), tc.est, pass.RemoteOf(ds, bp), tc.raw, grant, sdk.LocalOptions{Seed: &seed})
			require.NoError(t, err)
			assert.Equal(t, lacct.Steps(), racct.Steps())
			var lu, ru []float64
			for _, m := range local.Matrices {
				if m.Name == "U" {
					lu = m.M.RawMatrix().Data
				}
			}
			for _, m := range remote.Matrices {
				if m.Name == "U" {
					ru = m.M.RawMatrix().Data
				}
			}
			require.NotNil(t, lu)
			require.NotNil(t, ru)
			rel := relVec(ru, lu)
			t.Logf("%s through %d prism pipelines: %d steps, relative difference of U %.3g", tc.name, bp.runs, len(racct.Steps()), rel)
			assert.Less(t, rel, 1e-12)
			assert.Equal(t, local.Guarantee, remote.Guarantee)
		})
	}
}

// TestUsersCoders: the binary coders of users rows round-trip and refuse
// truncated input.
func TestUsersCoders(t *testing.T) {
	r := PosRow{Shard: 2, Row: 7, X: []float64{1, -2.5, math.Inf(1)}, Y: -0.5}
	b, err := encodePosRow(r)
	require.NoError(t, err)
	got, err := decodePosRow(b)
	require.NoError(t, err)
	assert.Equal(t, r, got)
	_, err = decodePosRow(b[:len(b)-1])
	require.Error(t, err)
	for _, u := range []pass.User{
		{X: [][]float64{{1, 2}, {3, 4}}, Y: []float64{5, 6}, Index: 3},
		{X: [][]float64{}, Y: []float64{}, Index: -1},
	} {
		b, err := encodeUser(u)
		require.NoError(t, err)
		got, err := decodeUser(b)
		require.NoError(t, err)
		assert.Equal(t, u, got)
	}
}
