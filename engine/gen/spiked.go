package gen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/sdk"
)

// ParseSpikes parses a spike list: one value (repeated r times) or r
// comma-separated positive finite values.
func ParseSpikes(s string, r int) ([]float64, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 1 && len(parts) != r {
		return nil, fmt.Errorf("spike list %q: want 1 or %d values, got %d", s, r, len(parts))
	}
	out := make([]float64, r)
	for k := range out {
		part := parts[0]
		if len(parts) == r {
			part = parts[k]
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			return nil, fmt.Errorf("spike list %q: %q is not a positive finite number", s, part)
		}
		out[k] = v
	}
	return out, nil
}

// SpikedName is the registered name of the spiked covariance model.
const SpikedName = "spiked"

func init() {
	Register(model{name: SpikedName,
		summary: "spiked covariance rows X = U(√λ∘h) + σg (Cai–Xia–Zha); truth U, Sigma, lambda, sigma2",
		params: []sdk.ParamSpec{
			{Name: "n", Type: sdk.Int, Default: "10000", Min: sdk.Bound(1), Doc: "number of rows (observations)"},
			{Name: "p", Type: sdk.Int, Default: "30", Min: sdk.Bound(2), Doc: "dimension"},
			{Name: "rank", Type: sdk.Int, Default: "2", Min: sdk.Bound(1), Doc: "number of spikes r"},
			{Name: "lambda", Type: sdk.String, Default: "24,20", Doc: "spike strengths above the noise floor, descending: one value (used for every spike) or r comma-separated values"},
			{Name: "sigma2", Type: sdk.Float, Default: "1", Min: sdk.Bound(0), Doc: "noise variance σ²"},
			{Name: "noise", Type: sdk.String, Default: "gaussian", Choices: []string{"gaussian", "rademacher", "uniform"}, Doc: "law of the standardised factors h and g"},
		},
		generate: generateSpiked})
}

// generateSpiked is the spiked covariance model of Cai, Xia and Zha: n centred rows
// X_i = U·(√λ ∘ h_i) + σ·g_i in ℝ^p, so that Cov(X_i) = U·diag(λ)·Uᵀ + σ²I
// with U a random p×r matrix with orthonormal columns. With noise=gaussian
// h and g are standard normal; with rademacher or uniform (on [−√3, √3])
// they are sub-Gaussian with the same covariance.
func generateSpiked(ps sdk.Params, rng *rand.Rand) (*Generated, error) {
	n, p, r := ps.Int("n"), ps.Int("p"), ps.Int("rank")
	if r >= p {
		return nil, fmt.Errorf("rank %d must be below the dimension %d", r, p)
	}
	lam, err := ParseSpikes(ps.String("lambda"), r)
	if err != nil {
		return nil, err
	}
	for k := 1; k < r; k++ {
		if lam[k] > lam[k-1] {
			return nil, fmt.Errorf("spikes %v must be in descending order", lam)
		}
	}
	s2 := ps.Float("sigma2")
	u := RandomOrthonormal(p, r, rng)
	draw := factorSampler(ps.String("noise"), rng)
	x := mat.NewDense(n, p, nil)
	sig := math.Sqrt(s2)
	sq := make([]float64, r)
	for k := range sq {
		sq[k] = math.Sqrt(lam[k])
	}
	h := make([]float64, r)
	ur := u.RawMatrix()
	for i := 0; i < n; i++ {
		row := x.RawRowView(i)
		for j := range row {
			row[j] = sig * draw()
		}
		for k := range h {
			h[k] = sq[k] * draw()
		}
		for j := 0; j < p; j++ {
			urow := ur.Data[j*ur.Stride : j*ur.Stride+r]
			var s float64
			for k, v := range urow {
				s += v * h[k]
			}
			row[j] += s
		}
	}
	var ul mat.Dense
	ul.Mul(u, mat.NewDiagDense(r, lam))
	sigma := mat.NewDense(p, p, nil)
	sigma.Mul(&ul, u.T())
	for j := 0; j < p; j++ {
		sigma.Set(j, j, sigma.At(j, j)+s2)
	}
	scal := map[string]float64{"n": float64(n), "p": float64(p), "rank": float64(r), "sigma2": s2}
	for k, v := range lam {
		scal[fmt.Sprintf("lambda_%d", k+1)] = v
	}
	return &Generated{
		Data:    &data.Dataset{Kind: data.Rows, X: x, Name: fmt.Sprintf("spiked(n=%d,p=%d,r=%d)", n, p, r)},
		Truth:   map[string]*mat.Dense{"U": u, "Sigma": sigma},
		Scalars: scal,
	}, nil
}

// RandomOrthonormal returns the Q factor of a p×r standard Gaussian matrix
// (Haar-distributed up to column signs).
func RandomOrthonormal(p, r int, rng *rand.Rand) *mat.Dense { return haar(p, r, rng, false) }

// haar returns the first r columns of the Q factor of the QR factorisation
// of a p×r matrix of independent standard normal entries, drawn row by
// row; with signs, each column's sign follows R's diagonal, which makes
// them exactly Haar-distributed.
func haar(p, r int, rng *rand.Rand, signs bool) *mat.Dense {
	g := mat.NewDense(p, r, nil)
	for i := 0; i < p; i++ {
		for k := 0; k < r; k++ {
			g.Set(i, k, rng.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(g)
	var q, rr mat.Dense
	qr.QTo(&q)
	qr.RTo(&rr)
	out := mat.DenseCopyOf(q.Slice(0, p, 0, r))
	for j := 0; signs && j < r; j++ {
		if rr.At(j, j) < 0 {
			for i := 0; i < p; i++ {
				out.Set(i, j, -out.At(i, j))
			}
		}
	}
	return out
}

func factorSampler(kind string, rng *rand.Rand) func() float64 {
	switch kind {
	case "rademacher":
		return func() float64 {
			if rng.Uint64()&1 == 0 {
				return -1
			}
			return 1
		}
	case "uniform":
		return func() float64 { return math.Sqrt(3) * (2*rng.Float64() - 1) }
	}
	return rng.NormFloat64
}
