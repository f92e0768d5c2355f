package stats

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/fedrep"
)

// TestUsersPassBench times fedrep-private on the rows, through pass.Local
// and through prism pipelines (interleaved round by round) when
// DPLR_BEAM_USERS_BENCH="users,rows per user,d,iterations,rounds" is set;
// it logs the medians, their ratios, the load average and the largest
// relative difference of U. Skipped otherwise (a measurement, not a test).
func TestUsersPassBench(t *testing.T) {
	spec := os.Getenv("DPLR_BEAM_USERS_BENCH")
	if spec == "" {
		t.Skip("set DPLR_BEAM_USERS_BENCH=users,rows,d,iterations,rounds")
	}
	var n, m, d, T, rounds int
	_, err := fmt.Sscanf(spec, "%d,%d,%d,%d,%d", &n, &m, &d, &T, &rounds)
	require.NoError(t, err)
	const k = 2
	r := rand.New(rand.NewPCG(1, 2))
	ustar := make([]float64, d*k)
	for i := range ustar {
		ustar[i] = r.NormFloat64() / float64(d)
	}
	var recs []urec
	for u := range n {
		v := []float64{r.NormFloat64(), r.NormFloat64()}
		for range m {
			x := make([]float64, d)
			var y float64
			for p := range x {
				x[p] = r.NormFloat64()
				y += x[p] * (ustar[p*k]*v[0] + ustar[p*k+1]*v[1])
			}
			recs = append(recs, urec{int64(u), x, y + 0.1*r.NormFloat64()})
		}
	}
	r.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	glob, ds := usersShards(t, recs, d)
	shape := pass.ShapeOf(ds)
	raw := map[string]string{"iterations": fmt.Sprint(T), "rank": fmt.Sprint(k), "output_v": "false"}
	grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	ctx := context.Background()
	run := func(ds2 any) ([]float64, time.Duration) {
		seed := uint64(5)
		start := time.Now()
		var res *sdk.Result
		switch v := ds2.(type) {
		case string: // local
			res, _, err = sdk.RunLocal(ctx, fedrep.PrivateFedRep{}, ds, raw, grant, sdk.LocalOptions{Seed: &seed})
		case *usersBeamPasser:
			res, _, err = sdk.RunLocal(ctx, fedrep.PrivateFedRep{}, pass.RemoteOf(ds, v), raw, grant, sdk.LocalOptions{Seed: &seed})
		default:
			res, _, err = sdk.RunLocal(ctx, fedrep.PrivateFedRep{}, pass.RemoteOf(ds, nil), raw, grant, sdk.LocalOptions{Seed: &seed})
		}
		el := time.Since(start)
		require.NoError(t, err)
		for _, mm := range res.Matrices {
			if mm.Name == "U" {
				return mm.M.RawMatrix().Data, el
			}
		}
		t.Fatal("no U")
		return nil, 0
	}
	var tl, tp, tb []time.Duration
	var worst float64
	var pipelines int
	for range rounds {
		ul, a := run("local")
		up, b := run(nil)
		bp := &usersBeamPasser{glob: glob, shape: shape}
		ub, c := run(bp)
		pipelines = bp.runs
		tl, tp, tb = append(tl, a), append(tp, b), append(tb, c)
		worst = max(worst, relVec(up, ul), relVec(ub, ul))
	}
	med := func(v []time.Duration) time.Duration {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[len(s)/2]
	}
	load, _ := exec.Command("uptime").Output()
	t.Logf("users %d × %d rows, d = %d, T = %d, %d rounds; %d prism pipelines per fit", n, m, d, T, rounds, pipelines)
	t.Logf("median fit: rows %v, pass.Local %v (%.2f×), prism %v (%.1f×, %v per pipeline); max relative difference of U %.3g",
		med(tl), med(tp), float64(med(tp))/float64(med(tl)), med(tb), float64(med(tb))/float64(med(tl)), med(tb)/time.Duration(pipelines), worst)
	t.Logf("load: %s", strings.TrimSpace(string(load)))
}
