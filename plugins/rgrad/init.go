package rgrad

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// moment returns the unbiased moment matrix L̂ = Λ⁻¹·(1/n)Σ y_i X_i
// (d1×d2).
func (e *fitEnv) moment() (*mat.Dense, error) {
	lvec := make([]float64, e.d1*e.d2)
	if err := e.pass.moment(e.ctx, lvec); err != nil {
		return nil, err
	}
	if err := e.cfg.design.ApplyInv(lvec); err != nil {
		return nil, err
	}
	if err := e.ctx.Err(); err != nil {
		return nil, err
	}
	return mat.NewDense(e.d1, e.d2, lvec), nil
}

// spectralInit is the non-private start M̂0 = SVD_r(L̂) (DERIVATIONS.md
// §2.1).
func spectralInit(e *fitEnv, lhat *mat.Dense) (Point, error) {
	u, s, v, err := e.be.SVDTop(lhat, e.r)
	if err != nil {
		return Point{}, fmt.Errorf("spectral initialisation: %w", err)
	}
	e.run.Progress("init", 1, 1)
	return Point{U: u, S: s, V: v}, nil
}

// privateSpectralInit is Algorithm 1 of the paper after L̂ (DERIVATIONS.md
// §2.2): private subspaces Ũ, Ṽ from symmetric Gaussian noise on the
// projectors ÛÛᵀ and V̂V̂ᵀ (sensitivity Δ⁽¹⁾), then the private core
// ŨᵀL̂Ṽ with i.i.d. noise on all r² entries (Δ⁽²⁾), each release paid from b.
func privateSpectralInit(e *fitEnv, lhat *mat.Dense, sens Sensitivities, b privacy.Budget) (Point, error) {
	uh, _, vh, err := e.be.SVDTop(lhat, e.r)
	if err != nil {
		return Point{}, fmt.Errorf("spectral initialisation: %w", err)
	}
	ut, su, err := noisyProjector(e, "init: left singular subspace ÛÛᵀ", uh, sens.Subspace, b)
	if err != nil {
		return Point{}, err
	}
	vt, _, err := noisyProjector(e, "init: right singular subspace V̂V̂ᵀ", vh, sens.Subspace, b)
	if err != nil {
		return Point{}, err
	}
	var tmp, core mat.Dense
	tmp.Mul(ut.T(), lhat)
	core.Mul(&tmp, vt)
	rel, err := e.run.Acct.Gaussian("init: core ŨᵀL̂Ṽ", sens.Core, e.r*e.r, b)
	if err != nil {
		return Point{}, err
	}
	// i.i.d. noise on all r² entries: the core is not symmetric (DERIVATIONS.md §7).
	if err := rel.AddDense(e.run.Rand, &core); err != nil {
		return Point{}, err
	}
	pc, s, qc, err := e.be.SVD(&core)
	if err != nil {
		return Point{}, fmt.Errorf("core SVD: %w", err)
	}
	u0 := mat.NewDense(e.d1, e.r, nil)
	u0.Mul(ut, pc)
	v0 := mat.NewDense(e.d2, e.r, nil)
	v0.Mul(vt, qc)
	e.res.AddScalar("sigma_subspace", su, sdk.Public, "standard deviation of each entry of the symmetric noise E_U and E_V")
	e.res.AddScalar("sigma_core", rel.Scale(), sdk.Public, "standard deviation of each entry of the core noise E_Σ")
	e.run.Progress("init", 1, 1)
	return Point{U: u0, S: s, V: v0}, nil
}

// noisyProjector releases uhUhᵀ + E, E symmetric with its upper triangle
// (diagonal included) i.i.d. Gaussian, and returns its r leading
// eigenvectors and the noise σ. eig_select "abs" ranks eigenvalues by
// magnitude (the paper's SVD_r), "algebraic" by value.
func noisyProjector(e *fitEnv, name string, uh *mat.Dense, sens float64, b privacy.Budget) (*mat.Dense, float64, error) {
	d, r := uh.Dims()
	rel, err := e.run.Acct.Gaussian(name, sens, d*(d+1)/2, b)
	if err != nil {
		return nil, 0, err
	}
	proj := mat.NewSymDense(d, nil)
	proj.SymOuterK(1, uh)
	if err := rel.AddSym(e.run.Rand, proj); err != nil {
		return nil, 0, err
	}
	out, err := leadingEigenvectors(e.be, proj, r, e.cfg.model.EigSelect)
	return out, rel.Scale(), err
}

// leadingEigenvectors returns the r eigenvectors of the symmetric s with
// the largest |λ| (sel "abs"; ties keep the algebraic order) or the largest
// λ (sel "algebraic").
func leadingEigenvectors(be backend.Backend, s *mat.SymDense, r int, sel string) (*mat.Dense, error) {
	d := s.SymmetricDim()
	vals, vecs, err := be.EigSym(s)
	if err != nil {
		return nil, fmt.Errorf("noisy projector eigendecomposition: %w", err)
	}
	idx := make([]int, d)
	for i := range idx {
		idx[i] = i
	}
	if sel != "algebraic" {
		for k := 0; k < r; k++ {
			best := k
			for j := k + 1; j < d; j++ {
				if math.Abs(vals[idx[j]]) > math.Abs(vals[idx[best]]) {
					best = j
				}
			}
			idx[k], idx[best] = idx[best], idx[k]
		}
	}
	out := mat.NewDense(d, r, nil)
	for k := 0; k < r; k++ {
		for i := 0; i < d; i++ {
			out.Set(i, k, vecs.At(i, idx[k]))
		}
	}
	return out, nil
}

// releaseClippedMoment releases, as the step called name at budget b, the
// moment matrix of clipped samples (‖X_i‖_F ≤ cx, |y_i| ≤ cy), Λ⁻¹
// applied, by the Gaussian mechanism with sensitivity 2·cx·cy/(C_l·n). It
// returns the noisy matrix, the noise's entry deviation and the number of
// clipped samples (evaluation only).
func (e *fitEnv) releaseClippedMoment(name string, cx, cy float64, b privacy.Budget) (*mat.Dense, float64, int, error) {
	design := e.cfg.design
	lvec := make([]float64, e.d1*e.d2)
	clipped, err := e.pass.clippedMoment(e.ctx, lvec, cx, cy)
	if err != nil {
		return nil, 0, 0, err
	}
	if err := design.ApplyInv(lvec); err != nil {
		return nil, 0, 0, err
	}
	if err := e.ctx.Err(); err != nil {
		return nil, 0, 0, err
	}
	sens := kernel.ClippedMomentSensitivity(cx, cy) / (design.Cl * float64(e.n))
	rel, err := e.run.Acct.Gaussian(name, sens, e.d1*e.d2, b)
	if err != nil {
		return nil, 0, 0, err
	}
	noisy := mat.NewDense(e.d1, e.d2, lvec)
	if err := rel.AddDense(e.run.Rand, noisy); err != nil {
		return nil, 0, 0, err
	}
	return noisy, rel.Scale(), clipped, nil
}

// clippedMomentInit is rgrad-strict's start (DERIVATIONS.md §2.6, §6): the
// clipped moment matrix L̃ (releaseClippedMoment, |y_i| ≤ cy), then its
// rank-r SVD, the singular values soft-thresholded at the noise's
// operator-norm scale σ(√d1 + √d2) when init_shrink is set
// (post-processing with public σ). It also returns the top r singular
// values of L̃ before the shrinkage, and σ.
func clippedMomentInit(e *fitEnv, cy float64, b privacy.Budget) (Point, []float64, float64, error) {
	o := e.cfg.strict
	cx := o.clipX(e.cfg.design, e.d1, e.d2)
	noisy, sigma, clipped, err := e.releaseClippedMoment("init: clipped moment matrix L̂", cx, cy, b)
	if err != nil {
		return Point{}, nil, 0, err
	}
	u, s, v, err := e.be.SVDTop(noisy, e.r)
	if err != nil {
		return Point{}, nil, 0, fmt.Errorf("private initialisation: %w", err)
	}
	raw := append([]float64(nil), s...)
	if o.InitShrink {
		thr := sigma * (math.Sqrt(float64(e.d1)) + math.Sqrt(float64(e.d2)))
		for k := range s {
			s[k] = math.Max(s[k]-thr, 0)
		}
	}
	e.res.AddScalar("sigma_init", sigma, sdk.Public, "standard deviation of the Gaussian noise added to the clipped L̂")
	e.res.AddScalar("sensitivity_init", kernel.ClippedMomentSensitivity(cx, cy)/(e.cfg.design.Cl*float64(e.n)), sdk.Public, "Frobenius replace-one sensitivity 2·clip_x·clip_y/(C_l·n) of the clipped L̂")
	e.res.AddScalar("init_clipped_samples", float64(clipped), sdk.Evaluation, "samples whose X_i or y_i was clipped in L̂ (NOT private)")
	e.run.Progress("init", 1, 1)
	return Point{U: u, S: s, V: v}, raw, sigma, nil
}
