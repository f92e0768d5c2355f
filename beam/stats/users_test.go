package stats

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
)

type urec struct {
	id int64
	x  []float64
	y  float64
}

func usersCSV(recs []urec, d int) string {
	var b strings.Builder
	b.WriteString("user")
	for j := range d {
		fmt.Fprintf(&b, ",x%d", j)
	}
	b.WriteString(",y\n")
	for _, r := range recs {
		fmt.Fprintf(&b, "%d", r.id)
		for _, v := range r.x {
			b.WriteString("," + strconvFormat(v))
		}
		b.WriteString("," + strconvFormat(r.y) + "\n")
	}
	return b.String()
}

// usersData returns records of nu users (user 0 holds many rows with
// large values) in a shuffled order.
func usersData(nu, d int, seed uint64) []urec {
	r := rand.New(rand.NewPCG(seed, 9))
	var recs []urec
	for u := range nu {
		m := 3 + r.IntN(6)
		scale := 1.0
		if u == 0 {
			m, scale = 400, 50
		}
		for range m {
			x := make([]float64, d)
			for j := range x {
				x[j] = r.NormFloat64() * scale
			}
			recs = append(recs, urec{int64(1000 + u), x, r.NormFloat64() * scale})
		}
	}
	r.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	return recs
}

// usersReference computes the bounded sum on the single-machine reader's
// grouping of the one file.
func usersReference(t *testing.T, path string, u *mat.Dense, b UsersOptions, skip int64) (sum []float64, users int64) {
	ds, err := dataio.Load(path, dataio.LoadOptions{Kind: data.Users})
	require.NoError(t, err)
	d, k := ds.P(), 0
	var uf []float64
	if u != nil {
		_, k = u.Dims()
		uf = mat.DenseCopyOf(u).RawMatrix().Data
	}
	for g := range ds.NumUsers() {
		if ds.UserIDs[g] == skip {
			continue
		}
		var rows []UserRow
		for i := ds.UserStart[g]; i < ds.UserStart[g+1]; i++ {
			rows = append(rows, UserRow{X: append([]float64(nil), ds.X.RawRowView(i)...), Y: ds.Y[i]})
		}
		rows = canonical(rows, b.MaxRows)
		var term []float64
		if u == nil {
			term = InitTerm(rows, d)
		} else {
			term = RoundTerm(rows, uf, d, k)
		}
		if term == nil {
			continue
		}
		clipFrob(term, b.Bound)
		if sum == nil {
			sum = make([]float64, len(term))
		}
		for i, v := range term {
			sum[i] += v
		}
		users++
	}
	return sum, users
}

func relVec(a, b []float64) float64 {
	var num, den float64
	for i := range a {
		num += (a[i] - b[i]) * (a[i] - b[i])
		den += b[i] * b[i]
	}
	return math.Sqrt(num / math.Max(den, 1e-300))
}

// TestUsersMatchesSingleMachine: users split across shards are grouped,
// bounded after grouping and summed as on the one file; a user holding
// many rows moves the aggregate by at most the bound.
func TestUsersMatchesSingleMachine(t *testing.T) {
	const d, k = 5, 2
	recs := usersData(30, d, 3)
	dir := t.TempDir()
	third := len(recs) / 3
	for i, part := range [][]urec{recs[:third], recs[third : 2*third], recs[2*third:]} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("u-%d.csv", i)), []byte(usersCSV(part, d)), 0o644))
	}
	whole := filepath.Join(t.TempDir(), "whole.csv")
	require.NoError(t, os.WriteFile(whole, []byte(usersCSV(recs, d)), 0o644))
	var noBig []urec
	for _, r := range recs {
		if r.id != 1000 {
			noBig = append(noBig, r)
		}
	}
	without := filepath.Join(t.TempDir(), "without.csv")
	require.NoError(t, os.WriteFile(without, []byte(usersCSV(noBig, d)), 0o644))

	u := mat.NewDense(d, k, nil)
	u.Set(0, 0, 1)
	u.Set(1, 1, 1)
	bound := UsersOptions{MaxRows: 50, Bound: 2}
	for _, tc := range []struct {
		name string
		u    *mat.Dense
	}{{"initialisation", nil}, {"round", u}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ComputeUsers(context.Background(), filepath.Join(dir, "u-*.csv"), tc.u, bound, Options{})
			require.NoError(t, err)
			want, n := usersReference(t, whole, tc.u, bound, -1)
			assert.Equal(t, n, got.Users)
			assert.Less(t, relVec(got.Sum, want), 1e-12)

			// The user with 400 large rows changes the sum by ≤ the bound.
			rest, err := ComputeUsers(context.Background(), without, tc.u, bound, Options{})
			require.NoError(t, err)
			var diff float64
			for i := range got.Sum {
				diff += (got.Sum[i] - rest.Sum[i]) * (got.Sum[i] - rest.Sum[i])
			}
			assert.LessOrEqual(t, math.Sqrt(diff), bound.Bound*(1+1e-12))
			assert.GreaterOrEqual(t, got.Clipped, int64(1))
		})
	}
}

// TestUsersAndTraceReaderErrors: in the users and trace pipelines too, an
// empty shard, a corrupt shard and a NaN row fail with the single-machine
// reader's message for that file (read as the same kind).
func TestUsersAndTraceReaderErrors(t *testing.T) {
	good := "user,x0,x1,x2,x3,y\n1,1,2,3,4,5\n2,2,3,4,5,6\n"
	for _, kind := range []data.Kind{data.Users, data.Trace} {
		for _, tc := range []struct {
			name, content string
		}{
			{"empty shard", ""},
			{"corrupt shard", "user,x0,x1,x2,x3,y\n1,2,\"3\n"},
			{"NaN row", "user,x0,x1,x2,x3,y\n3,1,2,3,4,5\n4,1,NaN,3,4,5\n"},
		} {
			t.Run(fmt.Sprint(kind, " ", tc.name), func(t *testing.T) {
				dir := t.TempDir()
				require.NoError(t, os.WriteFile(filepath.Join(dir, "s0.csv"), []byte(good), 0o644))
				bad := filepath.Join(dir, "s1.csv")
				require.NoError(t, os.WriteFile(bad, []byte(tc.content), 0o644))
				// As trace data the user column is one more feature: 5 = d1·d2.
				_, want := dataio.Load(bad, dataio.LoadOptions{Kind: kind, D1: 1, D2: 5})
				require.Error(t, want)
				var err error
				glob := filepath.Join(dir, "s*.csv")
				if kind == data.Users {
					_, err = ComputeUsers(context.Background(), glob, nil, UsersOptions{Bound: 1}, Options{})
				} else {
					_, err = SufficientStats(context.Background(), glob, TraceOptions{D1: 1, D2: 5}, 1, Options{})
				}
				require.Error(t, err)
				assert.Contains(t, err.Error(), "shard "+bad+": "+want.Error())
			})
		}
	}
}
