package pass

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
)

// goldenPasses are the bit patterns (sha256 prefixes of the records,
// outputs and scalars) of every kind's in-process result on goldenData,
// measured at main 58a9864 before the typed codec (GOMAXPROCS 2): a kind's result must
// not change by one bit. users.validation was measured again after the
// FedRep selection's score for a held-out user with two head rows changed
// (the two-row contrast of plugins/fedrep/DERIVATIONS.md §13), a change of
// what the kind computes.
var goldenPasses = []string{
	"rows.moment 5cb42e7d72008018", "rows.clipped_sum 139682bb03993187", "rows.centred_moment 829875e6b1e4da60",
	"rows.centred_moment 5405780783f6db94", "rows.norm_histogram 444d8a02bd27c29e", "trace.moment d7ff5ee24a5b76dd",
	"trace.clipped_moment 9cc7c28ad38c71a6", "trace.gradient c1d1f37dc52878a3", "trace.clipped_gradient 3c7f11c62605354d",
	"trace.response_counts 004e3b1fb3d5a7c0", "users.ustat e9a6eae94b15c12b", "users.ustat 80787fef8c7d317b",
	"users.ustat_hist 7fb3dece505bd5bf", "users.gradient 2275ed4294f4b2ae", "users.gradient 725118c86edbd2c2",
	"users.gradient_hist 4e773917b4df6fc4", "users.holdout e7fe6eaa25480532", "users.validation a55eab219db59728",
	"users.altmin c66f7401598609b9",
}

// TestGoldenPasses: every kind's result is bit-identical to the one
// measured before the typed codec (amd64, where Go fuses no
// multiply-adds; the parallel reductions are fixed by the data size).
func TestGoldenPasses(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("golden bit patterns measured on amd64")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2)) // the trace sums add one partial per worker
	var got []string
	run := func(t *testing.T, ds *data.Dataset, req data.PassRequest) {
		res, err := Local(ds).Pass(context.Background(), req)
		require.NoError(t, err, req.Kind)
		h := sha256.New()
		fmt.Fprint(h, res.Records)
		for _, o := range res.Outputs {
			fmt.Fprint(h, o.Name, o.Rows, o.Cols)
			for _, v := range o.Data {
				fmt.Fprint(h, math.Float64bits(v), " ")
			}
		}
		var ks []string
		for k := range res.Scalars {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			fmt.Fprint(h, k, math.Float64bits(res.Scalars[k]))
		}
		got = append(got, fmt.Sprintf("%s %x", req.Kind, h.Sum(nil)[:8]))
	}
	arr := func(name string, r, c int, d []float64) data.Array {
		return data.Array{Name: name, Rows: r, Cols: c, Data: d}
	}
	vec := func(r *rand.Rand, n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = r.NormFloat64()
		}
		return v
	}

	r := rand.New(rand.NewPCG(1, 2))
	n, p := 300, 6
	x := vec(r, n*p)
	for i := 0; i < n; i += 7 {
		x[i*p] *= 20
	}
	rows := &data.Dataset{Kind: data.Rows, X: mat.NewDense(n, p, x)}
	center := vec(r, p)
	grid := []float64{0.5, 1, 2, 4, 8, 16}
	var gp map[string]float64
	run(t, rows, data.PassRequest{Kind: RowsMoment, Params: map[string]float64{"clip": 2}})
	run(t, rows, data.PassRequest{Kind: RowsClippedSum, Params: map[string]float64{"clip": 2}, Inputs: []data.Array{arr("center", 1, p, make([]float64, p))}})
	run(t, rows, data.PassRequest{Kind: RowsCentredMoment, Params: map[string]float64{"clip": 2}, Inputs: []data.Array{arr("center", 1, p, center)}})
	run(t, rows, data.PassRequest{Kind: RowsCentredMoment, Params: map[string]float64{"clip": 0}, Inputs: []data.Array{arr("center", 1, p, make([]float64, p))}})
	run(t, rows, data.PassRequest{Kind: RowsNormHistogram, Params: gp, Inputs: []data.Array{arr("grid", 1, len(grid), grid), arr("center", 1, p, center)}})

	d1, d2 := 3, 2
	tr := &data.Dataset{Kind: data.Trace, X: mat.NewDense(n, d1*d2, vec(r, n*d1*d2)), Y: vec(r, n), D1: d1, D2: d2}
	m := vec(r, d1*d2)
	run(t, tr, data.PassRequest{Kind: TraceMoment})
	run(t, tr, data.PassRequest{Kind: TraceClippedMoment, Params: map[string]float64{"cx": 1.5, "cy": 0.7}})
	run(t, tr, data.PassRequest{Kind: TraceGradient, Inputs: []data.Array{arr("m", 1, d1*d2, m)}})
	run(t, tr, data.PassRequest{Kind: TraceClippedGradient, Params: map[string]float64{"tau": 0.8, "rank": 1},
		Inputs: []data.Array{arr("m", 1, d1*d2, m), arr("u", d1, 1, []float64{1, 0, 0}), arr("vt", 1, d2, []float64{0, 1})}})
	run(t, tr, data.PassRequest{Kind: TraceResponseCounts, Params: gp, Inputs: []data.Array{arr("grid", 1, len(grid), grid)}})

	users := &data.Dataset{Kind: data.Users, UserStart: []int{0}}
	var ux []float64
	for u := 0; u < 30; u++ {
		k := 2 + r.IntN(9)
		for range k {
			ux = append(ux, vec(r, p)...)
			users.Y = append(users.Y, r.NormFloat64())
		}
		users.UserStart = append(users.UserStart, len(users.Y))
		users.UserIDs = append(users.UserIDs, int64(u))
	}
	users.X = mat.NewDense(len(users.Y), p, ux)
	k := 2
	u := make([]float64, p*k)
	u[0], u[k+1] = 1, 1
	edges := []float64{0.01, 0.1, 1, 10}
	group := make([]float64, 30)
	for i := 0; i < 30; i += 2 {
		group[i] = 1
	}
	common := func(extra map[string]float64, _ bool) map[string]float64 {
		q := map[string]float64{"local_fraction": 0.25, "holdout": 0.2, "sign": 0, "proj": 0}
		for a, b := range extra {
			if a == "bins" {
				continue
			}
			q[a] = b
		}
		return q
	}
	ua := arr("u", p, k, u)
	ea := arr("edges", 1, len(edges), edges)
	ga := arr("group", 1, 30, group)
	bins := float64(len(edges))
	th := map[string]float64{"rank": 2, "loss": 0, "ridge": 0, "batch": 0, "round": 0, "seed": 0}
	with := func(a, b map[string]float64) map[string]float64 {
		o := map[string]float64{}
		for x, y := range a {
			o[x] = y
		}
		for x, y := range b {
			o[x] = y
		}
		return o
	}
	run(t, users, data.PassRequest{Kind: UsersUstat, Params: common(map[string]float64{"clip": 0.5}, false)})
	run(t, users, data.PassRequest{Kind: UsersUstat, Params: common(map[string]float64{"clip": 0.5}, true), Inputs: []data.Array{ga}})
	run(t, users, data.PassRequest{Kind: UsersUstatHist, Params: common(map[string]float64{"bins": bins}, false), Inputs: []data.Array{ea}})
	run(t, users, data.PassRequest{Kind: UsersGradient, Params: common(with(th, map[string]float64{"clip": 0.3}), false), Inputs: []data.Array{ua}})
	run(t, users, data.PassRequest{Kind: UsersGradient, Params: common(with(th, map[string]float64{"clip": 0.3, "batch": 1, "round": 1, "seed": 9}), false), Inputs: []data.Array{ua}})
	run(t, users, data.PassRequest{Kind: UsersGradientHist, Params: common(with(th, map[string]float64{"bins": bins}), false), Inputs: []data.Array{ua, ea}})
	run(t, users, data.PassRequest{Kind: UsersHoldout, Params: common(map[string]float64{"rank": 2, "loss": 0, "ridge": 0, "head_all": 1, "heads": 1}, false), Inputs: []data.Array{ua}})
	run(t, users, data.PassRequest{Kind: UsersValidation, Params: common(map[string]float64{"rank": 2, "loss": 0, "ridge": 0, "head_all": 0, "accuracy": 0}, true), Inputs: []data.Array{ua, ga}})
	run(t, users, data.PassRequest{Kind: UsersAltMin, Params: common(map[string]float64{"rank": 2, "loss": 0, "ridge": 0, "clip_w": 0.5, "clip_y": 1, "portion": 3}, true), Inputs: []data.Array{ua, ga}})

	assert.Equal(t, goldenPasses, got)
}
