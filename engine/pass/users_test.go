package pass

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/kernel"
)

// usersData returns n users of d features with 2…9 rows each (user 0:
// rowsOf0 rows of scale scale0), responses from a rank-one model.
func usersData(n, d, rowsOf0 int, scale0 float64, seed uint64) *data.Dataset {
	r := rand.New(rand.NewPCG(seed, 5))
	w := make([]float64, d)
	for j := range w {
		w[j] = r.NormFloat64()
	}
	ds := &data.Dataset{Kind: data.Users, UserStart: []int{0}}
	var xs []float64
	for u := 0; u < n; u++ {
		m, s := 2+r.IntN(8), 1.0
		if u == 0 {
			m, s = rowsOf0, scale0
		}
		for range m {
			var y float64
			for j := 0; j < d; j++ {
				v := r.NormFloat64() * s
				xs = append(xs, v)
				y += v * w[j]
			}
			ds.Y = append(ds.Y, y+0.1*r.NormFloat64()*s)
		}
		ds.UserStart = append(ds.UserStart, len(ds.Y))
		ds.UserIDs = append(ds.UserIDs, int64(u))
	}
	ds.X = mat.NewDense(len(ds.Y), d, xs)
	return ds
}

// replaceFirst returns ds with user 0's rows replaced by m rows of
// features and responses of scale s.
func replaceFirst(ds *data.Dataset, m int, s float64) *data.Dataset {
	r := rand.New(rand.NewPCG(99, 5))
	d := ds.P()
	out := &data.Dataset{Kind: data.Users, UserIDs: ds.UserIDs, UserStart: []int{0, m}}
	var xs []float64
	for range m {
		for range d {
			xs = append(xs, r.NormFloat64()*s)
		}
		out.Y = append(out.Y, r.NormFloat64()*s)
	}
	first := ds.UserStart[1]
	for i := first; i < ds.N(); i++ {
		xs = append(xs, ds.X.RawRowView(i)...)
		out.Y = append(out.Y, ds.Y[i])
	}
	for _, st := range ds.UserStart[2:] {
		out.UserStart = append(out.UserStart, st-first+m)
	}
	out.X = mat.NewDense(len(out.Y), d, xs)
	return out
}

// ones returns n ones.
func ones(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

// usersReq builds a users request with the common parameters.
func usersReq(kind string, extra map[string]float64, inputs ...data.Array) data.PassRequest {
	p := map[string]float64{"local_fraction": 0.2, "holdout": 0.2, "sign": 0, "proj": 0}
	if kind == UsersGradient || kind == UsersGradientHist {
		p["batch"], p["round"], p["seed"] = 0, 0, 0
	}
	if kind == UsersHoldout || kind == UsersValidation {
		p["head_all"] = 0
	}
	if kind == UsersHoldout {
		p["heads"] = 0
	}
	if kind == UsersValidation {
		p["accuracy"] = 0
	}
	for k, v := range extra {
		p[k] = v
	}
	return data.PassRequest{Kind: kind, Params: p, Inputs: inputs}
}

// orthonormal returns a d×k matrix with orthonormal columns.
func orthonormal(d, k int, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	g := mat.NewDense(d, k, nil)
	for i := range d {
		for j := range k {
			g.Set(i, j, r.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(g)
	var q mat.Dense
	qr.QTo(&q)
	return mat.DenseCopyOf(q.Slice(0, d, 0, k)).RawMatrix().Data
}

func edgesArray() data.Array {
	var e []float64
	for j := -40; j <= 40; j++ {
		e = append(e, math.Exp2(float64(j)))
	}
	return data.Array{Name: "edges", Rows: 1, Cols: len(e), Data: e}
}

// TestUsersSplit: the split follows the user's own row count only.
func TestUsersSplit(t *testing.T) {
	for _, tc := range []struct {
		m        int
		lf, ho   float64
		m0, rest int
	}{
		{10, 0, 0, 10, 10}, {10, 0.5, 0, 5, 10}, {10, 0.3, 0.2, 6, 8}, {1, 0.9, 0.9, 1, 1}, {3, 0.5, 0.5, 1, 2},
	} {
		m0, rest := UserSplit(tc.m, tc.lf, tc.ho)
		assert.Equal(t, [2]int{tc.m0, tc.rest}, [2]int{m0, rest}, "%+v", tc)
	}
}

// TestUsersLocal: every users kind runs through Local with the host's
// checks and returns one record per user; a sum is within users·clip and
// a histogram counts every user once.
func TestUsersLocal(t *testing.T) {
	d, k := 5, 2
	ds := usersData(40, d, 30, 1, 3)
	u := data.Array{Name: "u", Rows: d, Cols: k, Data: orthonormal(d, k, 2)}
	e := edgesArray()
	withU := map[string]float64{"rank": float64(k), "loss": 0, "ridge": 0}
	merge := func(a, b map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for k, v := range a {
			out[k] = v
		}
		for k, v := range b {
			out[k] = v
		}
		return out
	}
	for _, tc := range []struct {
		name string
		req  data.PassRequest
	}{
		{"ustat", usersReq(UsersUstat, map[string]float64{"clip": 0.5})},
		{"ustat unclipped", usersReq(UsersUstat, map[string]float64{"clip": 0})},
		{"ustat hist", usersReq(UsersUstatHist, nil, e)},
		{"gradient", usersReq(UsersGradient, merge(withU, map[string]float64{"clip": 0.3}), u)},
		{"gradient hist", usersReq(UsersGradientHist, withU, u, e)},
		{"holdout", usersReq(UsersHoldout, merge(withU, map[string]float64{"head_all": 1}), u)},
		{"holdout heads", usersReq(UsersHoldout, merge(withU, map[string]float64{"heads": 1}), u)},
		{"validation", usersReq(UsersValidation, merge(withU, map[string]float64{"accuracy": 0}), u)},
		{"theory gradient", usersReq(UsersGradient, merge(withU, map[string]float64{"clip": 0.3, "batch": 1, "round": 1, "seed": 12}), u)},
		{"grouped ustat", usersReq(UsersUstat, map[string]float64{"clip": 0.5},
			data.Array{Name: "group", Rows: 1, Cols: 40, Data: append(ones(20), make([]float64, 20)...)})},
		{"altmin", usersReq(UsersAltMin, merge(withU, map[string]float64{"clip_w": 0.5, "clip_y": 1, "portion": 4}), u,
			data.Array{Name: "group", Rows: 1, Cols: 40, Data: ones(40)})},
		{"logistic projected", usersReq(UsersGradient, map[string]float64{"rank": 1, "loss": 1, "ridge": 0, "clip": 0.3, "sign": 1, "proj": 3},
			data.Array{Name: "u", Rows: 3, Cols: 1, Data: []float64{0.6, 0.8, 0}},
			data.Array{Name: "m", Rows: 3, Cols: d, Data: mat.DenseCopyOf(mat.NewDense(d, 3, orthonormal(d, 3, 9)).T()).RawMatrix().Data})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Local(ds).Pass(context.Background(), tc.req)
			require.NoError(t, err)
			assert.Equal(t, int64(40), res.Records)
			if c := tc.req.Params["clip"]; c > 0 {
				sum, _ := res.Output("sum")
				assert.LessOrEqual(t, kernel.Norm(sum.Data), 40*c*(1+1e-12))
				assert.Greater(t, res.Scalars["clipped"], 0.0)
			}
			if h, ok := res.Output("counts"); ok {
				var tot float64
				for _, v := range h.Data {
					tot += v
				}
				assert.Equal(t, 40.0, tot)
			}
			if tc.req.Kind == UsersHoldout {
				assert.Greater(t, res.Scalars["loss_users"], 0.0)
				assert.Greater(t, res.Scalars["loss_sum"], 0.0)
				if h, ok := res.Output("heads"); ok {
					assert.Equal(t, 40, h.Rows)
					assert.Greater(t, kernel.Norm(h.Data), 0.0)
				}
			}
			if tc.req.Kind == UsersValidation {
				assert.Greater(t, res.Scalars["score_sum"], 0.0)
				assert.LessOrEqual(t, res.Scalars["score_sum"], 40.0)
			}
			if tc.req.Params["batch"] > 0 {
				// users of fewer than 4 training rows sit round 1 out
				assert.Greater(t, res.Scalars["skipped"], 0.0)
				assert.Less(t, res.Scalars["skipped"], 40.0)
			}
			// The in-process runner equals the users' terms added one by
			// one in data order (its chunks change the order of the sum
			// only) and does not depend on the number of threads.
			c, err := UsersConfigOf(ShapeOf(ds), tc.req)
			require.NoError(t, err)
			a := c.NewPartial()
			for g := 0; g < 40; g++ {
				lo, hi := ds.UserStart[g], ds.UserStart[g+1]
				x := make([][]float64, hi-lo)
				for i := range x {
					x[i] = ds.X.RawRowView(lo + i)
				}
				c.Add(a, User{X: x, Y: ds.Y[lo:hi], Index: g}, nil)
			}
			ref := c.Result(a)
			for _, o := range ref.Outputs {
				got, _ := res.Output(o.Name)
				assert.InDelta(t, 0, relDiffOrZero(got.Data, o.Data), 1e-12, o.Name)
			}
			for name, v := range ref.Scalars {
				assert.InDelta(t, v, res.Scalars[name], 1e-12*math.Max(1, math.Abs(v)), name)
			}
			prev := runtime.GOMAXPROCS(1)
			one, err := Local(ds).Pass(context.Background(), tc.req)
			runtime.GOMAXPROCS(prev)
			require.NoError(t, err)
			assert.Equal(t, res, one)
		})
	}
}

// relDiffOrZero is ‖a − b‖/‖b‖, or ‖a‖ when b is zero.
func relDiffOrZero(a, b []float64) float64 {
	var num, den float64
	for i := range b {
		num += (a[i] - b[i]) * (a[i] - b[i])
		den += b[i] * b[i]
	}
	if den == 0 {
		return math.Sqrt(num)
	}
	return math.Sqrt(num / den)
}

// TestUsersBound: one user holding many rows of huge values moves each
// clipped sum by at most 2·clip (replace one user) and each histogram by
// at most one count out of one bin and into another, whatever its rows.
func TestUsersBound(t *testing.T) {
	d, k := 4, 2
	base := usersData(30, d, 5, 1, 11)
	heavy := replaceFirst(base, 2000, 1e6) // the same users 1…29, user 0 replaced
	u := data.Array{Name: "u", Rows: d, Cols: k, Data: orthonormal(d, k, 4)}
	e := edgesArray()
	for _, tc := range []struct {
		name string
		req  data.PassRequest
		clip float64
	}{
		{"ustat", usersReq(UsersUstat, map[string]float64{"clip": 0.7}), 0.7},
		{"gradient", usersReq(UsersGradient, map[string]float64{"rank": float64(k), "loss": 0, "ridge": 0, "clip": 0.2}, u), 0.2},
		{"gradient ridge heads", usersReq(UsersGradient, map[string]float64{"rank": float64(k), "loss": 0, "ridge": 0.1, "clip": 0.2}, u), 0.2},
		{"gradient logistic", usersReq(UsersGradient, map[string]float64{"rank": float64(k), "loss": 1, "ridge": 0, "sign": 1, "clip": 0.2}, u), 0.2},
		{"altmin", usersReq(UsersAltMin, map[string]float64{"rank": float64(k), "loss": 0, "ridge": 0, "clip_w": 0.5, "clip_y": 2, "portion": 3}, u,
			data.Array{Name: "group", Rows: 1, Cols: 30, Data: ones(30)}), 0.5},
		{"altmin ridge heads", usersReq(UsersAltMin, map[string]float64{"rank": float64(k), "loss": 0, "ridge": 1e-3, "clip_w": 0.5, "clip_y": 2, "portion": 3}, u,
			data.Array{Name: "group", Rows: 1, Cols: 30, Data: ones(30)}), 0.5},
		{"ustat hist", usersReq(UsersUstatHist, nil, e), 0},
		{"gradient hist", usersReq(UsersGradientHist, map[string]float64{"rank": float64(k), "loss": 0, "ridge": 0}, u, e), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Local(base).Pass(context.Background(), tc.req)
			require.NoError(t, err)
			b, err := Local(heavy).Pass(context.Background(), tc.req)
			require.NoError(t, err)
			name := "sum"
			if tc.clip == 0 {
				name = "counts"
			}
			if tc.req.Kind == UsersAltMin {
				// Δ_A = √2·portion·c_W², Δ_b = 2·portion·c_W·c_y.
				for _, o := range []struct {
					name string
					lim  float64
				}{{"a", math.Sqrt2 * 3 * 0.25}, {"b", 2 * 3 * 0.5 * 2}} {
					sa, _ := a.Output(o.name)
					sb, _ := b.Output(o.name)
					diff := make([]float64, len(sa.Data))
					for i := range diff {
						diff[i] = sa.Data[i] - sb.Data[i]
					}
					assert.LessOrEqual(t, kernel.Norm(diff), o.lim*(1+1e-12), o.name)
					assert.Greater(t, kernel.Norm(diff), 0.0, o.name)
				}
				return
			}
			sa, _ := a.Output(name)
			sb, _ := b.Output(name)
			diff := make([]float64, len(sa.Data))
			var l1 float64
			for i := range diff {
				diff[i] = sa.Data[i] - sb.Data[i]
				l1 += math.Abs(diff[i])
			}
			if tc.clip > 0 {
				assert.LessOrEqual(t, kernel.Norm(diff), 2*tc.clip*(1+1e-12))
				assert.Greater(t, kernel.Norm(diff), 0.0)
			} else {
				assert.LessOrEqual(t, l1, 2.0)
			}
		})
	}
}

// TestUsersRefuses: bad users requests and forged results are refused
// with the reason.
func TestUsersRefuses(t *testing.T) {
	d := 4
	ds := usersData(10, d, 5, 1, 1)
	sh := ShapeOf(ds)
	u := data.Array{Name: "u", Rows: d, Cols: 2, Data: orthonormal(d, 2, 4)}
	for _, tc := range []struct {
		name string
		req  data.PassRequest
		want string
	}{
		{"holdout too large", usersReq(UsersUstat, map[string]float64{"clip": 1, "holdout": 0.95}), "outside [0, 0.9]"},
		{"negative clip", usersReq(UsersUstat, map[string]float64{"clip": -1}), "negative"},
		{"bad sign", usersReq(UsersUstat, map[string]float64{"clip": 1, "sign": 2}), "not 0 or 1"},
		{"rank above d", usersReq(UsersGradient, map[string]float64{"rank": 5, "loss": 0, "ridge": 0, "clip": 1}, data.Array{Name: "u", Rows: d, Cols: 5, Data: make([]float64, 20)}), "rank"},
		{"negative ridge", usersReq(UsersGradient, map[string]float64{"rank": 2, "loss": 0, "ridge": -1, "clip": 1}, u), "ridge -1 is not in [0, 10⁶]"},
		{"u shape", usersReq(UsersGradient, map[string]float64{"rank": 3, "loss": 0, "ridge": 0, "clip": 1}, u), "input u is 4×2, want 4×3"},
		{"edges not increasing", usersReq(UsersUstatHist, nil, data.Array{Name: "edges", Rows: 1, Cols: 2, Data: []float64{2, 1}}), "strictly increasing"},
		{"altmin group not a mask", usersReq(UsersAltMin, map[string]float64{"rank": 2, "loss": 0, "ridge": 0, "clip_w": 1, "clip_y": 1, "portion": 2}, u,
			data.Array{Name: "group", Rows: 1, Cols: 10, Data: append(make([]float64, 9), 2)}), "not 0 or 1"},
		{"missing projection", usersReq(UsersUstat, map[string]float64{"clip": 1, "proj": 2}), "inputs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Validate(data.Users, sh, tc.req)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	req := usersReq(UsersGradient, map[string]float64{"rank": 2, "loss": 0, "ridge": 0, "clip": 0.1}, u)
	s, err := Validate(data.Users, sh, req)
	require.NoError(t, err)
	good, err := s.Local(context.Background(), ds, req)
	require.NoError(t, err)
	require.NoError(t, CheckResult(s, sh, req, good))
	bad := *good
	bad.Outputs = []data.Array{{Name: "sum", Rows: d, Cols: 2, Data: make([]float64, 2*d)}}
	bad.Outputs[0].Data[0] = 100
	err = CheckResult(s, sh, req, &bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not clipped")
	bad = *good
	bad.Records = 9
	require.Error(t, CheckResult(s, sh, req, &bad))

	e := edgesArray()
	hreq := usersReq(UsersUstatHist, nil, e)
	hs, err := Validate(data.Users, sh, hreq)
	require.NoError(t, err)
	h, err := hs.Local(context.Background(), ds, hreq)
	require.NoError(t, err)
	h.Outputs[0].Data[3]++
	err = CheckResult(hs, sh, hreq, h)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "one count per record")
}
