package dataio

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
)

// TestLoadIdentityPartsShards checks that the parts of CSV shards, merged
// in any order, give the identity LoadIdentity computes for the one file
// holding their records, for every data kind; and that AddRecord over a
// loaded array source's rows gives its identity.
func TestLoadIdentityPartsShards(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const n, d = 90, 4
	var recs []string
	for range n {
		f := []string{strconv.Itoa(1 + r.IntN(7))}
		for range d + 1 {
			f = append(f, strconv.FormatFloat(r.NormFloat64(), 'g', -1, 64))
		}
		recs = append(recs, strings.Join(f, ","))
	}
	head := "user,x0,x1,x2,x3,y\n"
	dir := t.TempDir()
	write := func(name string, rs []string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(head+strings.Join(rs, "\n")+"\n"), 0o644))
		return path
	}
	whole := write("whole.csv", recs)
	shards := []string{write("a.csv", recs[:10]), write("b.csv", recs[10:55]), write("c.csv", recs[55:])}
	for _, opt := range []LoadOptions{
		{Kind: data.Rows},
		{Kind: data.Trace, D1: 1, D2: 5},
		{Kind: data.Users},
	} {
		t.Run(string(opt.Kind), func(t *testing.T) {
			_, want, err := LoadIdentity(whole, opt)
			require.NoError(t, err)
			var all IdentityParts
			for _, k := range []int{2, 0, 1} {
				_, q, err := LoadIdentityParts(shards[k], opt)
				require.NoError(t, err)
				all.Merge(q)
			}
			require.Equal(t, want, all.Identity())
		})
	}

	// An array source: features, responses and user ids.
	x := make([]float64, n*d)
	y := make([]float64, n)
	ids := make([]int64, n)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	for i := range y {
		y[i], ids[i] = r.NormFloat64(), int64(r.IntN(5))-2
	}
	for _, c := range []struct {
		name  string
		sides []sideCol
		f     func(i int) ([]float64, []int64)
	}{
		{"rows", nil, func(int) ([]float64, []int64) { return nil, nil }},
		{"trace", []sideCol{{f: y}}, func(i int) ([]float64, []int64) { return []float64{y[i]}, nil }},
		{"users", []sideCol{{f: y}, {i: ids}}, func(i int) ([]float64, []int64) { return []float64{y[i]}, []int64{ids[i]} }},
	} {
		t.Run(fmt.Sprint("array-", c.name), func(t *testing.T) {
			want := matrixBuilder(x, n, d, c.sides...).finish()
			var q IdentityParts
			for i := n - 1; i >= 0; i-- {
				fl, in := c.f(i)
				q.AddRecord(x[i*d:(i+1)*d], fl, in)
			}
			require.Equal(t, want, q.Identity())
		})
	}
}
