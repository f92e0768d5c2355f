package rgrad

import (
	"math"

	"github.com/dplr/dplr/engine/sdk"
)

// Config is a fully validated configuration of one fit.
type Config struct {
	Mode       Mode
	Rank       int
	Iterations int     // T
	Step       float64 // η
	Design     Design
	Retraction string // "fast" or "full"
	EigSelect  string // "abs" or "algebraic": how Ũ, Ṽ pick eigenvectors of the noisy projectors

	// Model-calibrated modes (Standard, Weak).
	Sigma1, SigmaR, SigmaXi float64
	Sensitivity             string // "explicit" or "paper" (DERIVATIONS.md §2.4, §2.5)
	Noise                   string // "exact", "zcdp", "classical" or "analytic"
	C1, C2, C3              float64
	InitShare               float64 // share of the budget for the initialisation

	// Strict mode.
	ClipX, ClipY, Clip float64
	InitShrink         bool // soft-threshold the noisy L̂'s singular values

	// observe, when set (tests), sees every iterate M_l (l = 0 is the
	// initial estimate) before its gradient step.
	observe func(l int, pt Point)
}

// validate checks the mode's inputs against the data's public shape (n,
// d1, d2) before anything is spent, and fills the default T = ⌈ln n⌉.
func (cfg *Config) validate(n, d1, d2 int) error {
	if cfg.Rank < 1 || cfg.Rank > min(d1, d2) {
		return sdk.BadRequest("rank %d must lie in [1, min(d1, d2) = %d]", cfg.Rank, min(d1, d2))
	}
	if n < 2 {
		return sdk.BadRequest("need at least 2 samples, got %d", n)
	}
	if cfg.Iterations == 0 {
		cfg.Iterations = int(math.Ceil(math.Log(float64(n))))
	}
	if err := checkPositive("step", cfg.Step); err != nil {
		return err
	}
	switch cfg.Mode {
	case NonPrivate:
		return nil
	case Strict:
		for _, c := range []struct {
			name string
			v    float64
		}{{"clip_x", cfg.ClipX}, {"clip_y", cfg.ClipY}, {"clip", cfg.Clip}} {
			if err := checkPositive(c.name, c.v); err != nil {
				return err
			}
		}
		return checkShare(cfg.InitShare)
	}
	for _, c := range []struct {
		name string
		v    float64
	}{{"sigma1", cfg.Sigma1}, {"sigmar", cfg.SigmaR}, {"c1", cfg.C1}, {"c2", cfg.C2}, {"c3", cfg.C3}} {
		if err := checkPositive(c.name, c.v); err != nil {
			return err
		}
	}
	if cfg.Sigma1 < cfg.SigmaR {
		return sdk.BadRequest("sigma1 = %v must be at least sigmar = %v", cfg.Sigma1, cfg.SigmaR)
	}
	if !(cfg.SigmaXi >= 0) || math.IsInf(cfg.SigmaXi, 0) {
		return sdk.BadRequest("sigma_xi = %v must be a non-negative finite number", cfg.SigmaXi)
	}
	if cfg.Mode == Weak && cfg.SigmaXi == 0 {
		return sdk.BadRequest("weak DP needs sigma_xi > 0: its sensitivities are proportional to the response noise")
	}
	return checkShare(cfg.InitShare)
}

// modelInputs are the public inputs of the model-calibrated sensitivities.
func (cfg *Config) modelInputs(n, d1, d2 int) ModelInputs {
	return ModelInputs{N: n, D1: d1, D2: d2, Rank: cfg.Rank, Sigma1: cfg.Sigma1, SigmaR: cfg.SigmaR,
		SigmaXi: cfg.SigmaXi, Step: cfg.Step, Cl: cfg.Design.Cl, Cu: cfg.Design.Cu, C1: cfg.C1, C2: cfg.C2, C3: cfg.C3,
		Weak: cfg.Mode == Weak, Paper: cfg.Sensitivity == sdk.SensitivityPaper}
}

func checkShare(v float64) error {
	if !(v > 0 && v < 1) {
		return sdk.BadRequest("init_share = %v must lie in (0, 1)", v)
	}
	return nil
}
