package orbit

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/plugins/internal/bingham"
)

// GibbsConfig configures the Givens–Gibbs sampler.
type GibbsConfig struct {
	// Sweeps is the number of sweeps (fixed in advance; default 100).
	Sweeps int
	// ReorthEvery re-orthonormalises U and recomputes B = UᵀAU every so
	// many sweeps to stop rounding drift (default 25).
	ReorthEvery int
	// Backend runs the QR and products of the drift control (nil: default).
	Backend backend.Backend
	// Init, if set, is the d×d orthogonal starting point; nil starts from a
	// Haar-random rotation (data-independent).
	Init *mat.Dense
	// Progress, if set, is called after each sweep.
	Progress func(done, total int)
}

// GibbsResult is one Givens–Gibbs draw.
type GibbsResult struct {
	// U is the d×k frame (the first k columns of the final rotation).
	U *mat.Dense
	// Full is the final d×d rotation.
	Full *mat.Dense
	// Energy holds ⟨A, U Λ Uᵀ⟩ after each sweep (data-dependent).
	Energy []float64
	// Sweeps and Pairs (pair updates per sweep) describe the work done.
	Sweeps, Pairs int
}

// OrbitPairs returns the Givens pairs (i, j), i < j < d, whose target
// eigenvalues differ (λ padded with zeros to length d). Their number is the
// orbit's real dimension D.
func OrbitPairs(lambda []float64, d int) [][2]int {
	l := padded(lambda, d)
	var out [][2]int
	for i := 0; i < d; i++ {
		for j := i + 1; j < d; j++ {
			if l[i] != l[j] {
				out = append(out, [2]int{i, j})
			}
		}
	}
	return out
}

// OrbitDim returns D = #{i < j : λ_i ≠ λ_j}, the real dimension of the orbit.
func OrbitDim(lambda []float64, d int) int { return len(OrbitPairs(lambda, d)) }

func padded(lambda []float64, d int) []float64 {
	l := make([]float64, d)
	copy(l, lambda)
	return l
}

// GibbsSample draws an approximate sample from the density
// ∝ exp(beta·⟨A, U Λ Uᵀ⟩) on SO(d) by Givens–Gibbs: each update rotates a
// pair of columns (i, j) with λ_i ≠ λ_j by an angle drawn exactly from its
// conditional law (a von Mises law in the doubled angle), so the Haar-based
// target is stationary. The chain starts from a Haar-random rotation (or
// cfg.Init) and runs cfg.Sweeps sweeps in a fixed pair order; the result is
// not certified to be close to the target.
func GibbsSample(ctx context.Context, rnd *privacy.Source, a mat.Symmetric, lambda []float64, beta float64, cfg GibbsConfig) (*GibbsResult, error) {
	d := a.SymmetricDim()
	k := len(lambda)
	if err := checkRank(k, d); err != nil {
		return nil, err
	}
	if math.IsNaN(beta) || math.IsInf(beta, 0) || beta < 0 {
		return nil, fmt.Errorf("inverse temperature %v must be finite and ≥ 0", beta)
	}
	if cfg.Sweeps <= 0 {
		cfg.Sweeps = 100
	}
	if cfg.ReorthEvery <= 0 {
		cfg.ReorthEvery = 25
	}
	be := cfg.Backend
	if be == nil {
		be = backend.Default()
	}
	r := rnd.Rand()
	var u0 *mat.Dense
	if cfg.Init != nil {
		if rr, cc := cfg.Init.Dims(); rr != d || cc != d {
			return nil, fmt.Errorf("initial rotation is %d×%d, want %d×%d", rr, cc, d, d)
		}
		u0 = mat.DenseCopyOf(cfg.Init)
	} else {
		var err error
		if u0, err = HaarOrthogonal(r, d, be); err != nil {
			return nil, err
		}
	}
	l := padded(lambda, d)
	pairs := OrbitPairs(lambda, d)
	// ut holds Uᵀ row-major (row i = column u_i), b holds B = UᵀAU.
	ut := mat.DenseCopyOf(u0.T())
	bm, err := projected(a, ut, be)
	if err != nil {
		return nil, err
	}
	utRaw, bRaw := ut.RawMatrix(), bm.RawMatrix()
	energy := make([]float64, 0, cfg.Sweeps)
	for sw := 1; sw <= cfg.Sweeps; sw++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("gibbs sweep %d: %w", sw, err)
		}
		for _, p := range pairs {
			i, j := p[0], p[1]
			bii := bRaw.Data[i*bRaw.Stride+i]
			bjj := bRaw.Data[j*bRaw.Stride+j]
			bij := bRaw.Data[i*bRaw.Stride+j]
			ha, hb := (bii-bjj)/2, bij
			kappa := beta * (l[i] - l[j]) * math.Hypot(ha, hb)
			mu := math.Atan2(hb, ha)
			if l[i] < l[j] {
				// κ must be ≥ 0: flip the mean instead.
				kappa, mu = -kappa, mu+math.Pi
			}
			phi := bingham.VonMises(r, mu, kappa)
			c, s := math.Cos(phi/2), math.Sin(phi/2)
			rotateRows(utRaw.Data, utRaw.Stride, d, i, j, c, s)
			rotateRows(bRaw.Data, bRaw.Stride, d, i, j, c, s)
			rotateCols(bRaw.Data, bRaw.Stride, d, i, j, c, s)
		}
		if sw%cfg.ReorthEvery == 0 && sw < cfg.Sweeps {
			if err := reorth(ut, be); err != nil {
				return nil, err
			}
			nb, err := projected(a, ut, be)
			if err != nil {
				return nil, err
			}
			bm.Copy(nb)
		}
		var e float64
		for i := 0; i < k; i++ {
			e += l[i] * bRaw.Data[i*bRaw.Stride+i]
		}
		energy = append(energy, e)
		if cfg.Progress != nil {
			cfg.Progress(sw, cfg.Sweeps)
		}
	}
	if err := reorth(ut, be); err != nil {
		return nil, err
	}
	full := mat.DenseCopyOf(ut.T())
	return &GibbsResult{
		U:      mat.DenseCopyOf(full.Slice(0, d, 0, k)),
		Full:   full,
		Energy: energy,
		Sweeps: cfg.Sweeps,
		Pairs:  len(pairs),
	}, nil
}

// rotateRows applies (r_i, r_j) ← (c r_i + s r_j, −s r_i + c r_j).
func rotateRows(x []float64, stride, n, i, j int, c, s float64) {
	ri := x[i*stride : i*stride+n]
	rj := x[j*stride : j*stride+n]
	for t := range ri {
		a, b := ri[t], rj[t]
		ri[t] = c*a + s*b
		rj[t] = -s*a + c*b
	}
}

// rotateCols applies the same rotation to columns i and j.
func rotateCols(x []float64, stride, n, i, j int, c, s float64) {
	for t := 0; t < n; t++ {
		row := x[t*stride:]
		a, b := row[i], row[j]
		row[i] = c*a + s*b
		row[j] = -s*a + c*b
	}
}

// projected returns B = Ut A Utᵀ for Ut = Uᵀ.
func projected(a mat.Symmetric, ut *mat.Dense, be backend.Backend) (*mat.Dense, error) {
	d := a.SymmetricDim()
	var tmp mat.Dense
	if err := be.Mul(&tmp, ut, false, a, false); err != nil {
		return nil, fmt.Errorf("UᵀA: %w", err)
	}
	out := mat.NewDense(d, d, nil)
	if err := be.Mul(out, &tmp, false, ut, true); err != nil {
		return nil, fmt.Errorf("UᵀAU: %w", err)
	}
	// Symmetrise.
	for i := 0; i < d; i++ {
		for j := i + 1; j < d; j++ {
			v := (out.At(i, j) + out.At(j, i)) / 2
			out.Set(i, j, v)
			out.Set(j, i, v)
		}
	}
	return out, nil
}

// reorth replaces the rows of ut by an orthonormal set spanning the same
// flags (Gram–Schmidt order kept: QR of utᵀ with R's diagonal made positive).
func reorth(ut *mat.Dense, be backend.Backend) error {
	q, rr, err := be.QR(ut.T())
	if err != nil {
		return fmt.Errorf("re-orthonormalising: %w", err)
	}
	d, _ := q.Dims()
	for j := 0; j < d; j++ {
		sgn := 1.0
		if rr.At(j, j) < 0 {
			sgn = -1
		}
		for i := 0; i < d; i++ {
			ut.Set(j, i, sgn*q.At(i, j))
		}
	}
	return nil
}

// HaarOrthogonal returns a Haar-distributed d×d orthogonal matrix: the Q
// factor of a standard Gaussian matrix with R's diagonal made positive.
func HaarOrthogonal(r *rand.Rand, d int, be backend.Backend) (*mat.Dense, error) {
	g := mat.NewDense(d, d, nil)
	raw := g.RawMatrix().Data
	for i := range raw {
		raw[i] = r.NormFloat64()
	}
	q, rr, err := be.QR(g)
	if err != nil {
		return nil, fmt.Errorf("haar rotation: %w", err)
	}
	for j := 0; j < d; j++ {
		if rr.At(j, j) < 0 {
			for i := 0; i < d; i++ {
				q.Set(i, j, -q.At(i, j))
			}
		}
	}
	return q, nil
}
