package gen

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/sdk"
)

// OrbitSpikedName is the registered name of the unit-norm spiked model used
// by the orbit estimators.
const OrbitSpikedName = "orbit-spiked"

func init() {
	Register(model{name: OrbitSpikedName,
		summary: "unit-norm rows x = g/‖g‖, g ~ N(0, Q diag(s) Qᵀ) with k spikes (orbit benchmark); truth U, Sigma, A",
		params: []sdk.ParamSpec{
			{Name: "n", Type: sdk.Int, Default: "2000", Min: sdk.Bound(1), Max: sdk.Bound(1e8), Doc: "number of rows (users)"},
			{Name: "d", Type: sdk.Int, Default: "20", Min: sdk.Bound(1), Max: sdk.Bound(1e5), Doc: "dimension"},
			{Name: "rank", Type: sdk.Int, Default: "3", Min: sdk.Bound(1), Max: sdk.Bound(1e5), Doc: "number of spikes k (k ≤ d)"},
			{Name: "spike", Type: sdk.Float, Default: "10", Min: sdk.Bound(1e-12), Max: sdk.Bound(1e12), Doc: "largest spike variance (the j-th is spike·(k−j+1)/k; the bulk has variance 1)"},
			{Name: "shape", Type: sdk.String, Default: "spiked", Choices: []string{"spiked", "projection", "isotropic"}, Doc: "spectrum shape"},
			{Name: "rotate", Type: sdk.Bool, Default: "true", Doc: "rotate the spikes by a Haar-random Q (false: coordinate axes)"},
		},
		generate: generateOrbitSpiked})
}

// generateOrbitSpiked draws n rows of norm exactly 1 (so the orbit estimators'
// clip = 1 never binds and tr(A) = n): g ~ N(0, Q diag(s) Qᵀ) with
// s_j = spike·(k−j+1)/k for j ≤ k and s_j = 1 otherwise, and x = g/‖g‖
// (the orbit studies' benchmark model). Q is a Haar rotation (or the
// identity with rotate=false). Shapes: "spiked" as above; "projection"
// draws x uniform on the unit sphere of the span of Q's first k columns
// (A ≈ (n/k)·projection); "isotropic" sets every s_j = 1.
func generateOrbitSpiked(p sdk.Params, rng *rand.Rand) (*Generated, error) {
	n, d, k := p.Int("n"), p.Int("d"), p.Int("rank")
	if k > d {
		return nil, fmt.Errorf("rank %d exceeds the dimension %d", k, d)
	}
	if float64(n)*float64(d) > 2e9 {
		return nil, fmt.Errorf("n·d = %d·%d is too large to hold in memory", n, d)
	}
	spike, shape := p.Float("spike"), p.String("shape")
	s := make([]float64, d)
	for j := range s {
		switch {
		case shape == "projection":
			if j < k {
				s[j] = 1
			}
		case shape == "spiked" && j < k:
			s[j] = spike * float64(k-j) / float64(k)
		default:
			s[j] = 1
		}
	}
	var q *mat.Dense
	if p.Bool("rotate") {
		q = RandomOrthonormal(d, d, rng)
	} else {
		q = mat.NewDense(d, d, nil)
		for i := 0; i < d; i++ {
			q.Set(i, i, 1)
		}
	}
	x := mat.NewDense(n, d, nil)
	z := make([]float64, d)
	for i := 0; i < n; i++ {
		row := x.RawRowView(i)
		var nrm float64
		for nrm == 0 {
			for j := range z {
				z[j] = math.Sqrt(s[j]) * rng.NormFloat64()
			}
			for r := 0; r < d; r++ {
				var v float64
				for j, zj := range z {
					v += q.At(r, j) * zj
				}
				row[r] = v
			}
			nrm = mat.Norm(mat.NewVecDense(d, row), 2)
		}
		for r := range row {
			row[r] /= nrm
		}
	}
	var qs, sigma mat.Dense
	qs.Mul(q, mat.NewDiagDense(d, s))
	sigma.Mul(&qs, q.T())
	var a mat.Dense
	a.Mul(x.T(), x)
	return &Generated{
		Data: &data.Dataset{Kind: data.Rows, X: x, Name: fmt.Sprintf("%s(n=%d, d=%d, k=%d, %s)", OrbitSpikedName, n, d, k, shape)},
		Truth: map[string]*mat.Dense{
			"U":     mat.DenseCopyOf(q.Slice(0, d, 0, k)),
			"Sigma": &sigma,
			"A":     &a,
		},
		Scalars: map[string]float64{"n": float64(n), "d": float64(d), "rank": float64(k), "spike": spike, "clip": 1, "trace_A": float64(n)},
	}, nil
}
