package gen

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/sdk"
)

// UsersLowRankName is the registered name of the shared-representation
// personalization model.
const UsersLowRankName = "users-lowrank"

func init() {
	Register(model{name: UsersLowRankName,
		summary: "users sharing a d×k representation: n users × m samples, y = ⟨x, U* v_i*⟩ + N(0, R²) (rows grouped by user)",
		params: []sdk.ParamSpec{
			{Name: "users", Type: sdk.Int, Default: "2000", Min: sdk.Bound(1), Max: sdk.Bound(1e7), Doc: "number of users n"},
			{Name: "samples", Type: sdk.Int, Default: "10", Min: sdk.Bound(1), Max: sdk.Bound(1e6), Doc: "samples per user m"},
			{Name: "dim", Type: sdk.Int, Default: "50", Min: sdk.Bound(1), Max: sdk.Bound(1e5), Doc: "feature dimension d"},
			{Name: "rank", Type: sdk.Int, Default: "2", Min: sdk.Bound(1), Max: sdk.Bound(1e4), Doc: "shared representation rank k (k ≤ d)"},
			{Name: "noise", Type: sdk.Float, Default: "0.01", Min: sdk.Bound(0), Max: sdk.Bound(1e6), Doc: "label noise standard deviation R"},
			{Name: "heads", Type: sdk.String, Default: "unit", Choices: []string{"unit", "gaussian"},
				Doc: "distribution of the user heads v_i*: unit (uniform on the unit sphere, as the paper's public code) or gaussian (N(0, I_k), as the paper's text)"},
			{Name: "labels", Type: sdk.String, Default: "regression", Choices: []string{"regression", "classification"},
				Doc: "regression: y = ⟨x, U* v_i*⟩ + noise; classification: y = sign of that (±1)"},
		},
		generate: generateUsers})
}

// generateUsers draws n users with m samples each from the shared low-rank
// linear model of personalized federated learning: x ~ N(0, I_d) and
// y = ⟨x, U* v_i*⟩ + ζ with ζ ~ N(0, R²), U* a d×k orthonormal matrix shared
// by all users and v_i* user-specific (Snedeker, Zhou & Bassily 2025 §3.4;
// Jain et al. 2021). With labels=classification the response is the sign of
// the same linear score (a ±1 label).
func generateUsers(p sdk.Params, rng *rand.Rand) (*Generated, error) {
	n, m, d, k := p.Int("users"), p.Int("samples"), p.Int("dim"), p.Int("rank")
	noise := p.Float("noise")
	if k > d {
		return nil, fmt.Errorf("rank %d exceeds the dimension %d", k, d)
	}
	if float64(n)*float64(m)*float64(d) > 4e9 {
		return nil, fmt.Errorf("users·samples·dim = %d·%d·%d is too large to hold in memory", n, m, d)
	}
	u := RandomOrthonormal(d, k, rng)
	v := userHeads(n, k, p.String("heads") == "unit", rng)
	x, y, start, ids := userSamples(u, v, m, noise, p.String("labels") == "classification", rng)
	sv, gamma, err := headSpectrum(v)
	if err != nil {
		return nil, err
	}
	ds := &data.Dataset{Kind: data.Users, X: x, Y: y, UserStart: start, UserIDs: ids,
		Name: fmt.Sprintf("%s(n=%d,m=%d,d=%d,k=%d,R=%g)", UsersLowRankName, n, m, d, k, noise)}
	return &Generated{
		Data:  ds,
		Truth: map[string]*mat.Dense{"U": u, "V": v},
		Scalars: map[string]float64{
			"users": float64(n), "samples": float64(m), "dim": float64(d), "rank": float64(k), "noise": noise,
			"gamma": gamma, "sigma_max": sv[0], "sigma_min": sv[len(sv)-1],
		},
	}, nil
}

// userHeads draws the n×k user heads v_i*: N(0, I_k), or with unit, those
// directions normalised onto the unit sphere.
func userHeads(n, k int, unit bool, rng *rand.Rand) *mat.Dense {
	v := mat.NewDense(n, k, nil)
	for i := 0; i < n; i++ {
		row := v.RawRowView(i)
		var nrm float64
		for j := range row {
			row[j] = rng.NormFloat64()
			nrm += row[j] * row[j]
		}
		if unit {
			nrm = math.Sqrt(nrm)
			if nrm == 0 {
				row[0], nrm = 1, 1
			}
			for j := range row {
				row[j] /= nrm
			}
		}
	}
	return v
}

// userSamples draws m samples for each user i: x ~ N(0, I_d) and
// y = ⟨x, u v_i⟩ + N(0, noise²) (its sign with classify). Rows are grouped
// by user: user i (id i) holds rows start[i] to start[i+1].
func userSamples(u, v *mat.Dense, m int, noise float64, classify bool, rng *rand.Rand) (x *mat.Dense, y []float64, start []int, ids []int64) {
	n, k := v.Dims()
	d, _ := u.Dims()
	rows := n * m
	x = mat.NewDense(rows, d, nil)
	y = make([]float64, rows)
	start = make([]int, n+1)
	ids = make([]int64, n)
	w := make([]float64, d)
	ur := u.RawMatrix()
	for i := 0; i < n; i++ {
		start[i] = i * m
		ids[i] = int64(i)
		vi := v.RawRowView(i)
		for a := 0; a < d; a++ {
			var s float64
			for b := 0; b < k; b++ {
				s += ur.Data[a*ur.Stride+b] * vi[b]
			}
			w[a] = s
		}
		for j := 0; j < m; j++ {
			r := i*m + j
			xr := x.RawRowView(r)
			var dot float64
			for a := range xr {
				xr[a] = rng.NormFloat64()
				dot += xr[a] * w[a]
			}
			yv := dot + noise*rng.NormFloat64()
			if classify {
				if yv >= 0 {
					yv = 1
				} else {
					yv = -1
				}
			}
			y[r] = yv
		}
	}
	start[n] = rows
	return x, y, start, ids
}

// headSpectrum returns the singular values of V*/√n (σ_max,* first,
// σ_min,* the k-th last) and γ = max_i ‖v_i*‖.
func headSpectrum(v *mat.Dense) (sv []float64, gamma float64, err error) {
	n, k := v.Dims()
	var svd mat.SVD
	sc := mat.NewDense(n, k, nil)
	sc.Scale(1/math.Sqrt(float64(n)), v)
	if !svd.Factorize(sc, mat.SVDNone) {
		return nil, 0, fmt.Errorf("SVD of the user heads did not converge")
	}
	sv = svd.Values(nil)
	for i := 0; i < n; i++ {
		gamma = math.Max(gamma, mat.Norm(v.RowView(i), 2))
	}
	return sv, gamma, nil
}
