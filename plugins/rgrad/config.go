package rgrad

import (
	"fmt"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/sdk"
)

// fitOptions is one fit's configuration: the bound options of its
// estimator, validated once by the SDK (the struct tags and the Check
// hooks, before anything is spent), and what the fit resolves from them
// against the data's public shape (the design, T).
type fitOptions struct {
	mode   Mode
	common *commonOptions // every mode
	model  *modelOptions  // rgrad-dp and rgrad-weak, else nil
	strict *strictOptions // rgrad-strict, else nil
	design Design
	// iterations is T: the option, or ⌈ln n⌉ when it is 0.
	iterations int
	// observe, when set (tests), sees every iterate M_l (l = 0 is the
	// initial estimate) before its gradient step.
	observe func(l int, pt Point)
}

// optionsOf returns the fit configuration of mode from the run's bound
// options; the design is parsed with be (a file design is read here).
func optionsOf(mode Mode, run *sdk.Run, be backend.Backend) (fitOptions, error) {
	cfg := fitOptions{mode: mode}
	switch mode {
	case Standard:
		cfg.model = sdk.Opts[modelOptions](run)
	case Weak:
		if o := sdk.Opts[weakOptions](run); o != nil {
			cfg.model = &o.modelOptions
		}
	case Strict:
		cfg.strict = sdk.Opts[strictOptions](run)
	case NonPrivate:
		cfg.common = sdk.Opts[commonOptions](run)
	}
	switch {
	case cfg.model != nil:
		cfg.common = &cfg.model.commonOptions
	case cfg.strict != nil:
		cfg.common = &cfg.strict.commonOptions
	}
	if cfg.common == nil {
		return cfg, fmt.Errorf("rgrad %s: the run carries no bound options", mode)
	}
	s := sdk.ShapeOf(run.Data)
	design, err := ParseDesign(cfg.common.Design, s.D1*s.D2, be)
	if err != nil {
		return cfg, err
	}
	cfg.design = design
	cfg.iterations = cfg.common.iterations(s.N)
	return cfg, nil
}

// step is η.
func (cfg *fitOptions) step() float64 { return cfg.common.Step.Value }
