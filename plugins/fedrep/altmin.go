package fedrep

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// NamePrivAltMin is the name of the Priv-AltMin estimator.
const NamePrivAltMin = "fedrep-privaltmin"

// PrivAltMin is the private alternating minimization of Jain, Rush, Smith,
// Song & Thakurta (NeurIPS 2021), the baseline Private FedRep improves on:
// each iteration takes a fresh, disjoint group of users, fits their heads
// v_j locally, and solves the U-step as an exact least squares in vec(U)
// from noised dk×dk and dk sufficient statistics.
type PrivAltMin struct{}

// Info implements sdk.Estimator.
func (PrivAltMin) Info() sdk.Info {
	ps := []sdk.ParamSpec{
		{Name: "rank", Type: sdk.Int, Default: "2", Min: sdk.Bound(1), Doc: "rank k of the shared representation U (d×k); k ≤ d and d·k ≤ 4096 (the dk×dk statistics are the scaling wall)"},
		{Name: "iterations", Type: sdk.Int, Default: "5", Min: sdk.Bound(1), Max: sdk.Bound(1e4), Doc: "number of U-steps T"},
		{Name: "clip_w", Type: sdk.Float, Default: "1e-4", Min: sdk.Bound(1e-300), Doc: "c_W: ℓ2 bound on each W = vec(x vᵀ) (public); the paper's experiment uses 1e-4 for both clips, which normalizes every sample"},
		{Name: "clip_y", Type: sdk.Float, Default: "1e-4", Min: sdk.Bound(1e-300), Doc: "c_y: bound on |y| (public)"},
		{Name: "portion", Type: sdk.Int, Default: "5", Min: sdk.Bound(1), Doc: "at most this many training rows per user enter the U-step statistics (public: the sensitivity scales with it)"},
		{Name: "groups", Type: sdk.String, Default: "disjoint", Choices: []string{"disjoint", "all"},
			Doc: "disjoint: T disjoint random groups of about n/T users, one per iteration (Jain et al.; parallel composition, each iteration gets the whole loop budget); all: every user in every iteration (the public experiment code; sequential composition over T)"},
		{Name: "init", Type: sdk.String, Default: "private", Choices: []string{"private", "random"}, Doc: "private: the same private U-statistic start as fedrep-private (003 Alg. 2); random: data-independent"},
		{Name: "init_clip", Type: sdk.Float, Default: "50", Min: sdk.Bound(1e-12), Doc: "ψ_init: Frobenius bound on each user's U-statistic (public)"},
		{Name: "init_share", Type: sdk.Float, Default: "0.2", Min: sdk.Bound(0.001), Max: sdk.Bound(0.999), Doc: "fraction of ρ spent on the initialization"},
		{Name: "a_share", Type: sdk.Float, Default: "0.5", Min: sdk.Bound(0.01), Max: sdk.Bound(0.99), Doc: "fraction of the loop's ρ spent on the dk×dk statistic A (the rest goes to b)"},
		{Name: "calibration", Type: sdk.String, Default: "zcdp", Choices: []string{"zcdp", "paper"},
			Doc: "zcdp: exact replace-one zCDP, ρ split init_share / (1 − init_share) and a_share between A and b; paper: Jain et al.'s noise multiplier Δ = √(8 ln(1/δ))/ε on both statistics (σ = sensitivity·Δ; needs an (ε, δ) grant with ε ≤ ln(1/δ), and with groups=all it is multiplied by √T), their true zCDP cost is what is recorded and the initialization gets the rest of ρ"},
		{Name: "ridge", Type: sdk.Float, Default: "1", Min: sdk.Bound(0), Doc: "ridge added to the noisy A before the solve, in units of c_W²·portion per user of the group (public quantities only; post-processing). 1 matches the public experiment code (ridge 1e-8 on its normalized statistics with c = 1e-4); it dominates the noisy A, so the U-step then behaves like U ∝ reshape(b). 0 = plain solve, which the noise ruins at n = 20000"},
	}
	ps = append(ps, splitParams()...)
	return sdk.Info{
		Name: NamePrivAltMin, Version: "0.1.0",
		Summary:  "Priv-AltMin (Jain et al. 2021): private alternating minimization with noised dk×dk least-squares statistics over disjoint user groups",
		DataKind: data.Users,
		Description: `Private alternating minimization of Jain et al. (NeurIPS 2021), as reconstructed from the appendix
(spec seed002-003 §4). Users are split into T disjoint groups, one per iteration. In an iteration
each user of the group fits its head v_j by least squares on its training half for the current U;
the server then releases A = Σ W Wᵀ (dk×dk, W = vec(x v_jᵀ) clipped to ℓ2 norm c_W) and
b = Σ clip(y, c_y) W with Gaussian noise (symmetric on A), solves A u = b for vec(U) and
re-orthonormalizes by QR. A is accumulated through the Kronecker identity
A_j = (Σ_i t_i² x̂_i x̂_iᵀ) ⊗ (v̂_j v̂_jᵀ), which costs O(m d² + d²k²) per user instead of O(m d²k²).

Privacy: user level, replace-one, worst case. With at most 'portion' rows per user, one user moves
A by at most √2·portion·c_W² in Frobenius norm (both contributions are PSD) and b by at most
2·portion·c_W·c_y. With disjoint groups a user enters one iteration only, so the loop costs one
iteration's ρ (parallel composition); the start (shared with fedrep-private) is composed on top.`,
		Guarantee:  "ρ-zCDP (hence (ε, δ)-DP) for U, user level, worst case (replace one user's whole data)",
		Grants:     []privacy.GrantKind{privacy.GrantApprox, privacy.GrantZCDP},
		Params:     ps,
		References: []string{"P. Jain, J. Rush, A. Smith, S. Song, A. Thakurta. Differentially Private Model Personalization. NeurIPS 2021.", refFedRep[0]},
	}
}

// altminStats accumulates, over the listed users, the U-step statistics
// A = Σ_j Σ_i W_ij W_ijᵀ (dk×dk, vec row-major: index p·k + a) and
// b = Σ_j Σ_i clip(y_ij, c_y) W_ij with W_ij = clip₂(vec(x_ij v_jᵀ), c_W),
// v_j being user j's least-squares head for U on its training half. It uses
// the Kronecker form A_j = H_j ⊗ v̂_j v̂_jᵀ. At most portion rows per user
// are used. Users whose head is zero or not finite contribute nothing.
func altminStats(ctx context.Context, eng *fedrepEngine, u []float64, users []int32, cw, cy float64, portion int) (*mat.SymDense, []float64, error) {
	d, k := eng.d, eng.k
	npair := k * (k + 1) / 2
	chunks := max(1, min(len(users), 32, int(8e6/float64(npair*d*d+1))))
	nw := workers(chunks)
	type scratch struct{ h, hb, xh, vh []float64 }
	ws := make([]scratch, nw)
	for w := range ws {
		ws[w] = scratch{h: make([]float64, d*d), hb: make([]float64, d), xh: make([]float64, d), vh: make([]float64, k)}
	}
	partC := make([][]float64, chunks) // npair blocks of d×d (upper triangles)
	partB := make([][]float64, chunks)
	err := parallelChunks(ctx, chunks, func(w, c int) {
		if partC[c] == nil {
			partC[c], partB[c] = make([]float64, npair*d*d), make([]float64, d*k)
		}
		s, accC, accB := ws[w], partC[c], partB[c]
		fws := eng.ws[w]
		lo, hi := chunkBounds(len(users), chunks, c)
		for _, ui := range users[lo:hi] {
			ur := eng.lay.users[ui]
			vRows, _ := eng.batches(fws, int(ui), 0)
			eng.localFit(fws, u, vRows, lossSquared)
			nv := norm2(fws.v)
			if nv == 0 || math.IsInf(nv, 0) || math.IsNaN(nv) {
				continue
			}
			for a := range s.vh {
				s.vh[a] = fws.v[a] / nv
			}
			for p := 0; p < d; p++ {
				row := s.h[p*d+p : p*d+d]
				for q := range row {
					row[q] = 0
				}
				s.hb[p] = 0
			}
			used := min(portion, ur.t1-ur.t0)
			for r := ur.t0; r < ur.t0+used; r++ {
				xr := eng.row(int32(r))
				nx := norm2(xr)
				if nx == 0 || math.IsInf(nx, 0) {
					continue
				}
				t := math.Min(nx*nv, cw) // ‖W‖ after clipping
				yt := math.Max(-cy, math.Min(cy, eng.y[r]))
				for p := range s.xh {
					s.xh[p] = xr[p] / nx
				}
				t2 := t * t
				for p := 0; p < d; p++ {
					xp := t2 * s.xh[p]
					if xp == 0 {
						continue
					}
					row := s.h[p*d+p : p*d+d]
					xx := s.xh[p:d]
					for q := range row {
						row[q] += xp * xx[q]
					}
					s.hb[p] += yt * t * s.xh[p]
				}
			}
			pi := 0
			for a := 0; a < k; a++ {
				for b := a; b < k; b++ {
					f := s.vh[a] * s.vh[b]
					blk := accC[pi*d*d : (pi+1)*d*d]
					for p := 0; p < d; p++ {
						row := blk[p*d+p : p*d+d]
						hr := s.h[p*d+p : p*d+d]
						for q := range row {
							row[q] += f * hr[q]
						}
					}
					pi++
				}
			}
			for p := 0; p < d; p++ {
				for a := 0; a < k; a++ {
					accB[p*k+a] += s.hb[p] * s.vh[a]
				}
			}
		}
	})
	if err != nil {
		return nil, nil, err
	}
	dk := d * k
	cs := make([]float64, npair*d*d)
	bs := make([]float64, dk)
	for c := 0; c < chunks; c++ {
		if partC[c] == nil {
			continue
		}
		for i, v := range partC[c] {
			cs[i] += v
		}
		for i, v := range partB[c] {
			bs[i] += v
		}
	}
	pairIdx := func(a, b int) int { // index of (min, max) among a ≤ b pairs
		if a > b {
			a, b = b, a
		}
		return a*k - a*(a-1)/2 + (b - a)
	}
	am := mat.NewSymDense(dk, nil)
	raw := am.RawSymmetric()
	for p := 0; p < d; p++ {
		for a := 0; a < k; a++ {
			i := p*k + a
			for q := p; q < d; q++ {
				for b := 0; b < k; b++ {
					j := q*k + b
					if j < i {
						continue
					}
					raw.Data[i*raw.Stride+j] = cs[pairIdx(a, b)*d*d+p*d+q]
				}
			}
		}
	}
	return am, bs, nil
}

// Fit implements sdk.Estimator.
func (PrivAltMin) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	p := run.Params
	k, T := p.Int("rank"), p.Int("iterations")
	d := run.Data.P()
	if k > d {
		return nil, sdk.BadRequest("rank %d exceeds the feature dimension %d", k, d)
	}
	if d*k > 4096 {
		return nil, sdk.BadRequest("d·k = %d exceeds 4096: the dk×dk statistics would need %.0f MB and an O((dk)³) solve per iteration (use fedrep-private)", d*k, 8*float64(d*k)*float64(d*k)/1e6)
	}
	lay, err := newLayout(run.Data, p.Float("local_fraction"), p.Float("holdout"))
	if err != nil {
		return nil, err
	}
	n := lay.n()
	disjoint := p.String("groups") == "disjoint"
	if disjoint && n < T {
		return nil, sdk.BadRequest("disjoint groups: %d users cannot form %d non-empty groups", n, T)
	}
	cw, cy, portion := p.Float("clip_w"), p.Float("clip_y"), p.Int("portion")
	psiInit := p.Float("init_clip")
	rho, err := run.Acct.TotalRho()
	if err != nil {
		return nil, err
	}
	initMode := p.String("init")
	share := p.Float("init_share")
	if initMode != "private" {
		share = 0
	}
	sensA := math.Sqrt2 * float64(portion) * cw * cw
	sensB := 2 * float64(portion) * cw * cy
	if math.IsInf(sensA, 0) || math.IsInf(sensB, 0) || sensA == 0 || sensB == 0 {
		return nil, sdk.BadRequest("clip_w = %g, clip_y = %g give a sensitivity that is zero or not finite", cw, cy)
	}
	rhoInit, rhoA, rhoB, err := planAltMinBudget(p.String("calibration"), run.Acct.Grant(), rho, share, p.Float("a_share"), T, disjoint, sensA, sensB)
	if err != nil {
		return nil, err
	}

	res := &sdk.Result{}
	x := run.Data.X
	eng := newFedrepEngine(x, run.Data.Y, lay, k, math.Inf(1), lossSquared)
	eng.headAll = p.String("head_data") == "all"
	run.Progress("init", 0, 1)
	u, err := initialU(ctx, run, x, run.Data.Y, lay, k, initMode, initMode == "private", psiInit, rhoInit, res)
	if err != nil {
		return nil, err
	}
	run.Progress("init", 1, 1)

	// Groups: a data-independent random partition of the users.
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	if disjoint {
		r := run.Rand.Split().Rand()
		r.Shuffle(n, func(a, b int) { order[a], order[b] = order[b], order[a] })
	}
	dk := d * k
	var sigA, sigB float64
	if disjoint {
		note := fmt.Sprintf("all %d iterations (disjoint user groups: parallel composition)", T)
		if sigA, err = run.Acct.SpendGaussianRho("U-step statistic A = Σ W Wᵀ, "+note, sensA, dk*(dk+1)/2, rhoA); err != nil {
			return nil, err
		}
		if sigB, err = run.Acct.SpendGaussianRho("U-step statistic b = Σ ỹ W, "+note, sensB, dk, rhoB); err != nil {
			return nil, err
		}
	}
	holdout := p.Float("holdout") > 0
	var curve []float64
	if holdout {
		l, err := eng.fitHeads(ctx, u.RawMatrix().Data, nil)
		if err != nil {
			return nil, err
		}
		curve = append(curve, l)
	}
	ridge := p.Float("ridge")
	for t := 0; t < T; t++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		group := order
		if disjoint {
			lo, hi := chunkBounds(n, T, t)
			group = order[lo:hi]
		}
		a, b, err := altminStats(ctx, eng, u.RawMatrix().Data, group, cw, cy, portion)
		if err != nil {
			return nil, err
		}
		if !disjoint {
			if sigA, err = run.Acct.SpendGaussianRho(fmt.Sprintf("iteration %d: U-step statistic A = Σ W Wᵀ", t+1), sensA, dk*(dk+1)/2, rhoA); err != nil {
				return nil, err
			}
			if sigB, err = run.Acct.SpendGaussianRho(fmt.Sprintf("iteration %d: U-step statistic b = Σ ỹ W", t+1), sensB, dk, rhoB); err != nil {
				return nil, err
			}
		}
		run.Rand.AddSymmetricGaussian(a, sigA)
		run.Rand.AddGaussian(b, sigB)
		// The ridge is post-processing in public units: the bound on the
		// rows a user contributes (portion) times the group size, never the
		// users' actual row counts, which are private (DERIVATIONS.md §5).
		vecU, err := symSolve(run, a, b, ridge*cw*cw*float64(portion*len(group)))
		if err != nil {
			return nil, fmt.Errorf("iteration %d: %w", t+1, err)
		}
		if u, err = orthonormalize(run.Backend, mat.NewDense(d, k, vecU)); err != nil {
			return nil, fmt.Errorf("iteration %d: %w", t+1, err)
		}
		if holdout {
			l, err := eng.fitHeads(ctx, u.RawMatrix().Data, nil)
			if err != nil {
				return nil, err
			}
			curve = append(curve, l)
		}
		run.Progress("iterations", t+1, T)
	}
	var heads *mat.Dense
	if p.Bool("output_v") {
		heads = mat.NewDense(n, k, nil)
	}
	final, err := eng.fitHeads(ctx, u.RawMatrix().Data, heads)
	if err != nil {
		return nil, err
	}
	res.AddMatrix("U", u, sdk.Public, "shared representation U (d×k, orthonormal columns)")
	if heads != nil {
		res.AddMatrix("V", heads, sdk.PerUser, "row i is the head v_i of the i-th user in increasing user-id order, fitted locally on the user's own rows (S¹, or S⁰ ∪ S¹ with head_data=all) for the released U; meant for user i only (not covered by the public guarantee, which is about U)")
		addUserIDs(res, run.Data)
	}
	if holdout {
		res.AddSeries("holdout_loss", curve, sdk.Evaluation, "per-iteration mean squared error on the users' hold-out rows (index 0 = after initialization); computed from raw data: NOT private")
		res.AddScalar("holdout_loss", final, sdk.Evaluation, "final mean squared error on the users' hold-out rows; computed from raw data: NOT private")
	}
	res.AddScalar("sigma_A", sigA, sdk.Public, "std of the symmetric Gaussian noise on A in each iteration")
	res.AddScalar("sigma_b", sigB, sdk.Public, "std of the Gaussian noise on b in each iteration")
	res.Guarantee = privacy.Guarantee{Kind: privacy.ZCDP,
		Neighbours: "one user's whole data replaced (user level, n public)",
		Assumptions: []string{fmt.Sprintf("public clips c_W = %g, c_y = %g, at most %d rows per user, ψ_init = %g (worst case)", cw, cy, portion, psiInit),
			fmt.Sprintf("number of users n = %d public", n)}}
	if disjoint {
		res.Guarantee.Assumptions[1] += "; the group partition is data independent"
	}
	if heads != nil {
		res.Guarantee.Assumptions = append(res.Guarantee.Assumptions, perUserAssumption)
	}
	res.Notes = append(res.Notes, fmt.Sprintf("zCDP split: initialization ρ = %.4g, A ρ = %.4g, b ρ = %.4g per %s; sensitivities Δ_A = %.4g, Δ_b = %.4g",
		rhoInit, rhoA, rhoB, map[bool]string{true: "loop (disjoint groups)", false: "iteration"}[disjoint], sensA, sensB))
	return res, nil
}

// planAltMinBudget splits the total zCDP budget rho of a Priv-AltMin run
// into the initialization's ρ and the ρ of each release of A and of b (per
// loop with disjoint groups, per iteration otherwise).
//
// calibration "zcdp" shares rho as init_share / (1 − init_share) and the
// loop's part as aShare / (1 − aShare). Calibration "paper" reproduces the
// accounting of Jain et al. (spec seed002-003 §4.5): both statistics get
// Gaussian noise σ = sensitivity·Δ with the noise multiplier
// Δ = √(8 ln(1/δ))/ε, which they show suffices for (ε, δ) when
// ε ≤ ln(1/δ); with every user in every iteration the T releases compose
// sequentially, so Δ is multiplied by √T. The cost recorded is the true
// zCDP cost of that σ (Δ_sens²/(2σ²) per release); the initialization gets
// whatever remains of rho.
func planAltMinBudget(calibration string, g privacy.Grant, rho, share, aShare float64, T int, disjoint bool, sensA, sensB float64) (rhoInit, rhoA, rhoB float64, err error) {
	switch calibration {
	case "paper":
		if g.Kind != privacy.GrantApprox {
			return 0, 0, 0, sdk.BadRequest("calibration=paper needs an (ε, δ) grant, got a %s grant", g.Kind)
		}
		if g.Epsilon > math.Log(1/g.Delta) {
			return 0, 0, 0, sdk.BadRequest("calibration=paper: Jain et al.'s multiplier √(8 ln(1/δ))/ε needs ε ≤ ln(1/δ) = %.4g, got ε = %g: %w", math.Log(1/g.Delta), g.Epsilon, privacy.ErrInvalidBudget)
		}
		mult := math.Sqrt(8*math.Log(1/g.Delta)) / g.Epsilon
		releases := 1.0
		if !disjoint {
			mult *= math.Sqrt(float64(T))
			releases = float64(T)
		}
		rhoA = privacy.RhoOfGaussian(sensA, sensA*mult)
		rhoB = privacy.RhoOfGaussian(sensB, sensB*mult)
		rest := rho - releases*(rhoA+rhoB)
		if rest <= 0 {
			return 0, 0, 0, sdk.BadRequest("calibration=paper: the loop costs ρ = %.4g, more than the grant's ρ = %.4g: %w", releases*(rhoA+rhoB), rho, privacy.ErrOverBudget)
		}
		if share > 0 {
			rhoInit = rest * (1 - 1e-9)
		}
		return rhoInit, rhoA, rhoB, nil
	default:
		rhoInit = share * rho
		rhoLoop := (1 - share) * rho
		rhoA, rhoB = aShare*rhoLoop, (1-aShare)*rhoLoop
		if !disjoint {
			rhoA, rhoB = rhoA/float64(T), rhoB/float64(T)
		}
		return rhoInit, rhoA, rhoB, nil
	}
}

// symSolve solves (a + ridge·I) u = b for symmetric a through its
// eigendecomposition (a may be indefinite after noise), dropping
// eigen-directions whose shifted eigenvalue is numerically zero.
func symSolve(run *sdk.Run, a *mat.SymDense, b []float64, ridge float64) ([]float64, error) {
	vals, vecs, err := run.Backend.EigSym(a)
	if err != nil {
		return nil, fmt.Errorf("U-step solve: %w", err)
	}
	n := len(b)
	maxAbs := 0.0
	for _, v := range vals {
		maxAbs = math.Max(maxAbs, math.Abs(v+ridge))
	}
	out := make([]float64, n)
	vr := vecs.RawMatrix()
	for j, l := range vals {
		l += ridge
		if math.Abs(l) <= 1e-12*maxAbs {
			continue
		}
		var c float64
		for i := 0; i < n; i++ {
			c += vr.Data[i*vr.Stride+j] * b[i]
		}
		c /= l
		for i := 0; i < n; i++ {
			out[i] += c * vr.Data[i*vr.Stride+j]
		}
	}
	if !allFinite(out) {
		return nil, fmt.Errorf("U-step solve: solution is not finite")
	}
	return out, nil
}
