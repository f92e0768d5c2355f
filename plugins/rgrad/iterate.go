package rgrad

import (
	"fmt"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/privacy"
)

// iterationRule is how the Riemannian gradient iterations treat the data.
// The zero value is the non-private iteration (no clipping, no noise).
type iterationRule struct {
	// clip > 0 clips each per-sample projected gradient ‖res_i·P_T(X_i)‖_F
	// to clip (τ).
	clip float64
	// sens is the declared sensitivity 2ητ/n of the released step.
	sens float64
	// budget, when set, pays each iteration's Gaussian release.
	budget *privacy.Budget
}

// trajectory is what the iterations leave behind.
type trajectory struct {
	end     Point
	losses  []float64 // training loss at each iterate (NOT private)
	changes []float64 // ‖M_{l+1} − M_l‖_F (a function of the released iterates)
	clipped []float64 // clipped samples per iteration (NOT private)
	sigma   float64   // σ of the last iteration's noise
}

// riemannianGradient runs T steps of (DP-)RGrad from start
// (DERIVATIONS.md §2.3): at M_l = U_l Σ_l V_lᵀ the (clipped) least-squares
// gradient G_l, the tangent step B_l = M_l − η P_T(G_l), under DP the
// Gaussian release of B_l (sensitivity 2ητ/n: every per-sample term of
// P_T(G_l) has norm ≤ τ and B_l lies in the tangent space, §5.1), and the
// retraction M_{l+1} = SVD_r(P_T(B_l + N_l)).
func riemannianGradient(e *fitEnv, start Point, rule iterationRule) (trajectory, error) {
	cfg := e.cfg
	T := cfg.iterations
	p := e.d1 * e.d2
	tr := trajectory{end: start}
	grad := make([]float64, p)
	for l := 0; l < T; l++ {
		if err := e.ctx.Err(); err != nil {
			return tr, err
		}
		pt := tr.end
		if cfg.observe != nil {
			cfg.observe(l, pt)
		}
		m := pt.Dense()
		var loss float64
		var err error
		if rule.clip > 0 {
			var nc int
			loss, nc, err = e.pass.clippedGradient(e.ctx, grad, m.RawMatrix().Data, tangentOf(pt.U, pt.V), rule.clip)
			tr.clipped = append(tr.clipped, float64(nc))
		} else {
			loss, err = e.pass.gradient(e.ctx, grad, m.RawMatrix().Data)
		}
		if err != nil {
			return tr, fmt.Errorf("iteration %d: %w", l+1, err)
		}
		tr.losses = append(tr.losses, loss)
		// B_l = M_l − η P_T(G_l): the released statistic lies in the tangent
		// space, so its sensitivity is that of ηP_T(G_l).
		b := TangentProject(pt.U, pt.V, mat.NewDense(e.d1, e.d2, grad))
		floats.AddScaledTo(b.RawMatrix().Data, m.RawMatrix().Data, -cfg.step(), b.RawMatrix().Data)
		if rule.budget != nil {
			rel, err := e.run.Acct.Gaussian(fmt.Sprintf("rgrad iteration %d/%d: gradient step", l+1, T), rule.sens, p, *rule.budget)
			if err != nil {
				return tr, err
			}
			if err := rel.AddDense(e.run.Rand, b); err != nil {
				return tr, err
			}
			tr.sigma = rel.Scale()
		}
		next, err := retract(e.be, cfg.common.Retraction, pt, b, e.r)
		if err != nil {
			return tr, fmt.Errorf("iteration %d: %w", l+1, err)
		}
		nm := next.Dense()
		nm.Sub(nm, m)
		tr.changes = append(tr.changes, mat.Norm(nm, 2))
		tr.end = next
		e.run.Progress("rgrad", l+1, T)
	}
	return tr, nil
}

// retract returns SVD_r(P_T(b)) by the fast (two thin QRs and a 2r×2r SVD)
// or the full (SVD of the projected d1×d2 matrix) retraction.
func retract(be backend.Backend, how string, pt Point, b *mat.Dense, r int) (Point, error) {
	if how == "full" {
		return RetractFull(be, pt.U, pt.V, b, r)
	}
	return RetractFast(be, pt.U, pt.V, b, r)
}

func diag(s []float64) *mat.Dense {
	out := mat.NewDense(len(s), len(s), nil)
	for i, v := range s {
		out.Set(i, i, v)
	}
	return out
}
