// Package orbitstudy is the accuracy study of the orbit estimators on the
// orbit-spiked model or a given rows data set: utility loss against ε
// beside the predictions and bounds of plugins/orbit/DERIVATIONS.md §8, and
// the Givens–Gibbs sampler's mixing. `bench study orbit` prints its tables.
package orbitstudy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/evaluate"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/orbit"
)

// Study tasks.
const (
	// TaskPCA is rank-k PCA: public projection spectrum, metric the loss
	// OPT − ⟨A, H⟩.
	TaskPCA = "pca"
	// TaskRankK is rank-k approximation with a private spectrum, metric
	// ‖A − H‖_F².
	TaskRankK = "rank-k"
)

// StudyConfig describes a utility-versus-ε study on the orbit-spiked model.
type StudyConfig struct {
	Task    string // TaskPCA (default) or TaskRankK
	D, K, N int
	Spike   float64
	Eps     []float64
	Reps    int     // runs per cell (medians are over these)
	Sweeps  int     // Givens–Gibbs sweeps
	Delta   float64 // for the Gaussian mechanism
	BetaF   float64 // failure probability for the bounds
	Seed    uint64
	Backend backend.Backend
}

// DefaultStudy is the default benchmark cell: d = 20, k = 3, n = 2000,
// spike 10, ε ∈ {0.25, 0.5, 1, 2}, 20 runs.
func DefaultStudy() StudyConfig {
	return StudyConfig{Task: TaskPCA, D: 20, K: 3, N: 2000, Spike: 10, Eps: []float64{0.25, 0.5, 1, 2}, Reps: 20, Sweeps: 100, Delta: 1e-6, BetaF: 0.05, Seed: 1}
}

// StudyRow is one (ε, mechanism) cell of a study.
type StudyRow struct {
	D, K, N   int
	Eps       float64
	Mechanism string
	Guarantee string
	Metric    string  // "loss" (PCA) or "frobenius_error_sq" (rank-k)
	Median    float64 // median of the metric over the runs
	Mean      float64
	Q90       float64
	Predicted float64 // high-signal prediction (plugins/orbit/DERIVATIONS.md §8), NaN if none
	Upper     float64 // τ*(β_f) (PCA, orbit EM) or UB23 (rank-k, Alg. 2) of plugins/orbit/DERIVATIONS.md §8; NaN otherwise
	LB        float64 // LB24 lower bound with c = 1 (order of magnitude; DERIVATIONS.md §8)
	Reference float64 // PCA: loss of a uniformly random frame, OPT − kΓ/d; rank-k: the optimum Σ_{ℓ>k} γ_ℓ²
	SecPerRun float64 // median wall time per run (data → release)
	Runs      int
}

// data draws cfg's data set from the orbit-spiked model with cfg.Seed.
func (cfg StudyConfig) data() (*gen.Generated, error) {
	m, err := gen.Lookup(gen.OrbitSpikedName)
	if err != nil {
		return nil, err
	}
	return gen.Run(m, map[string]string{"n": strconv.Itoa(cfg.N), "d": strconv.Itoa(cfg.D), "rank": strconv.Itoa(cfg.K),
		"spike": strconv.FormatFloat(cfg.Spike, 'g', -1, 64)}, cfg.Seed)
}

// spectrum returns the backend, the clipped second-moment matrix A of ds,
// its spectrum γ (descending) and the PCA task's projection spectrum
// λ = (1, …, 1) of length k.
func (cfg StudyConfig) spectrum(ctx context.Context, ds *data.Dataset, clip float64) (backend.Backend, *mat.SymDense, []float64, []float64, error) {
	be := cfg.Backend
	if be == nil {
		be = backend.Default()
	}
	a, _, err := orbit.ClippedMatrix(ctx, ds, clip)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	gamma, _, err := be.EigSym(a)
	lambda := make([]float64, cfg.K)
	for i := range lambda {
		lambda[i] = 1
	}
	return be, a, gamma, lambda, err
}

// RunStudy runs the study: the same data set for every cell (drawn from the
// orbit-spiked model with cfg.Seed), fresh mechanism randomness for each
// run (seeds derived from cfg.Seed), all through sdk.RunLocal.
func RunStudy(ctx context.Context, cfg StudyConfig) ([]StudyRow, error) {
	g, err := cfg.data()
	if err != nil {
		return nil, err
	}
	return RunStudyData(ctx, cfg, g.Data, 1)
}

// RunStudyData runs the study of cfg (ignoring cfg.D, cfg.N, cfg.Spike) on
// a given rows data set with the public row-norm bound clip, e.g. a real
// data set read with engine/dataio.
func RunStudyData(ctx context.Context, cfg StudyConfig, ds *data.Dataset, clip float64) ([]StudyRow, error) {
	cfg.N, cfg.D = ds.X.Dims()
	be, a, gamma, lambda, err := cfg.spectrum(ctx, ds, clip)
	if err != nil {
		return nil, err
	}
	var trace float64
	for i := 0; i < cfg.D; i++ {
		trace += a.At(i, i)
	}
	clipS := strconv.FormatFloat(clip, 'g', -1, 64)
	k := strconv.Itoa(cfg.K)
	sweeps := strconv.Itoa(cfg.Sweeps)
	var rows []StudyRow
	if cfg.K < 1 || cfg.K > cfg.D {
		return nil, fmt.Errorf("rank %d must lie in [1, d = %d]", cfg.K, cfg.D)
	}
	for _, eps := range cfg.Eps {
		beta := eps / 2
		metric := "loss"
		ref := orbit.Optimum(gamma, lambda) - float64(cfg.K)*trace/float64(cfg.D)
		lb := orbit.LB24(lambda, cfg.D, cfg.K, eps, 1)
		mechs := []studyMech{
			{"orbit-em (exact calib.)", orbit.EM{}, map[string]string{"clip": "1", "evaluate": "true", "rank": k, "iterations": sweeps}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: eps},
				orbit.PredictedEMLoss(lambda, cfg.D, beta), orbit.TauStar(beta, 1, trace, cfg.D*cfg.K, 0, cfg.BetaF)},
			{"orbit-deflation", orbit.Deflation{}, map[string]string{"clip": "1", "evaluate": "true", "rank": k}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: eps},
				orbit.PredictedDeflationLoss(cfg.D, cfg.K, eps), math.NaN()},
			{"orbit-gauss (analytic)", orbit.Gauss{}, map[string]string{"clip": "1", "evaluate": "true", "rank": k, "noise": privacy.NoiseAnalytic},
				privacy.Grant{Kind: privacy.GrantApprox, Epsilon: eps, Delta: cfg.Delta}, math.NaN(), math.NaN()},
		}
		if sigma, err := privacy.AnalyticGaussianSigma(math.Sqrt2, eps, cfg.Delta); err == nil {
			mechs[2].pred = orbit.PredictedGaussLoss(lambda, gamma, sigma)
		}
		if cfg.Task == TaskRankK {
			metric = "frobenius_error_sq"
			ref = 0
			for _, g := range gamma[cfg.K:] {
				ref += g * g
			}
			lb = orbit.LB24(gamma, cfg.D, cfg.K, eps, 1)
			mechs = []studyMech{
				{"orbit-rank-k (Alg. 2, exact calib.)", orbit.RankK{}, map[string]string{"clip": "1", "evaluate": "true", "rank": k, "iterations": sweeps}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: eps},
					math.NaN(), orbit.UB23(gamma, cfg.K, eps, trace, cfg.BetaF)},
				{"orbit-gauss (analytic, private spectrum)", orbit.Gauss{}, map[string]string{"clip": "1", "evaluate": "true", "rank": k, "noise": privacy.NoiseAnalytic, "spectrum": "private"},
					privacy.Grant{Kind: privacy.GrantApprox, Epsilon: eps, Delta: cfg.Delta}, math.NaN(), math.NaN()},
				{"orbit-nonprivate (true spectrum)", orbit.NonPrivate{}, map[string]string{"clip": "1", "evaluate": "true", "rank": k, "spectrum": "true"},
					privacy.Grant{Kind: privacy.GrantPure, Epsilon: eps}, math.NaN(), math.NaN()},
			}
		} else if cfg.Task != TaskPCA && cfg.Task != "" {
			return nil, fmt.Errorf("unknown study task %q", cfg.Task)
		}
		for mi, mc := range mechs {
			ls, ts, guar, err := runMech(ctx, cfg, ds, be, mc, mi, eps, metric, clipS)
			if err != nil {
				return nil, err
			}
			rows = append(rows, StudyRow{D: cfg.D, K: cfg.K, N: cfg.N, Eps: eps, Mechanism: mc.name, Guarantee: guar,
				Metric: metric, Median: evaluate.Quantile(0.5, ls), Mean: stat.Mean(ls, nil), Q90: evaluate.Quantile(0.9, ls), Predicted: mc.pred, Upper: mc.tau,
				LB: lb, Reference: ref, SecPerRun: evaluate.Quantile(0.5, ts), Runs: len(ls)})
		}
	}
	return rows, nil
}

// studyMech is one mechanism of a study: estimator, request, grant and the
// predicted figures its row reports.
type studyMech struct {
	name  string
	est   sdk.Estimator
	raw   map[string]string
	grant privacy.Grant
	pred  float64
	tau   float64
}

// runMech fits mechanism mc cfg.Reps times at ε with fresh seeds and
// returns the metric's values, the seconds per run and the guarantee kind.
func runMech(ctx context.Context, cfg StudyConfig, ds *data.Dataset, be backend.Backend, mc studyMech, mi int, eps float64, metric, clipS string) (ls, ts []float64, guar string, err error) {
	ls = make([]float64, 0, cfg.Reps)
	ts = make([]float64, 0, cfg.Reps)
	for r := 0; r < cfg.Reps; r++ {
		if err := ctx.Err(); err != nil {
			return nil, nil, "", err
		}
		seed := cfg.Seed*1_000_003 + uint64(mi)*10_007 + uint64(r) + uint64(math.Float64bits(eps)%997)*101
		t0 := time.Now()
		mc.raw["clip"] = clipS
		res, _, err := sdk.RunLocal(ctx, mc.est, ds, mc.raw, mc.grant, sdk.LocalOptions{Seed: &seed, Backend: be})
		if err != nil {
			return nil, nil, "", fmt.Errorf("%s at ε = %v: %w", mc.name, eps, err)
		}
		ts = append(ts, time.Since(t0).Seconds())
		for _, s := range res.Scalars {
			if s.Name == metric {
				ls = append(ls, s.Value)
			}
		}
		guar = string(res.Guarantee.Kind)
	}
	return ls, ts, guar, nil
}

// MarshalJSON encodes a row with NaN figures (not applicable) as null.
func (r StudyRow) MarshalJSON() ([]byte, error) {
	num := func(v float64) any {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return v
	}
	return json.Marshal(map[string]any{
		"d": r.D, "k": r.K, "n": r.N, "eps": r.Eps, "mechanism": r.Mechanism, "guarantee": r.Guarantee,
		"metric": r.Metric, "median": num(r.Median), "mean": num(r.Mean), "q90": num(r.Q90), "predicted": num(r.Predicted),
		"upper_bound": num(r.Upper), "lower_bound_c1": num(r.LB), "reference": num(r.Reference), "sec_per_run": num(r.SecPerRun), "runs": r.Runs,
	})
}

// WriteStudyMarkdown prints rows as a markdown table.
func WriteStudyMarkdown(w io.Writer, rows []StudyRow) error {
	var b strings.Builder
	b.WriteString("| d | k | n | ε | mechanism | guarantee | metric | median | mean | q90 | predicted | upper bound (τ* or UB23) | LB24 (c=1) | reference | s/run (median) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	f := func(v float64) string {
		if math.IsNaN(v) {
			return "–"
		}
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %d | %d | %g | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.D, r.K, r.N, r.Eps, r.Mechanism, r.Guarantee,
			r.Metric, f(r.Median), f(r.Mean), f(r.Q90), f(r.Predicted), f(r.Upper), f(r.LB), f(r.Reference), f(r.SecPerRun))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// MixingRow is the loss distribution after a given number of Givens–Gibbs
// sweeps from a Haar start.
type MixingRow struct {
	D, K, Sweeps int
	Eps          float64
	Mean, SE     float64 // mean loss and its Monte-Carlo standard error
	Q90          float64
	Predicted    float64 // D/(2β)
	Runs         int
}

// RunMixingStudy measures the loss of the orbit EM (PCA spectrum, exact
// calibration β = ε/2) after each sweep count in sweeps, reps independent
// chains each, on the orbit-spiked data of cfg (a stability check: the law
// at T and 4T must agree).
func RunMixingStudy(ctx context.Context, cfg StudyConfig, sweeps []int) ([]MixingRow, error) {
	g, err := cfg.data()
	if err != nil {
		return nil, err
	}
	be, a, gamma, lambda, err := cfg.spectrum(ctx, g.Data, 1)
	if err != nil {
		return nil, err
	}
	opt := orbit.Optimum(gamma, lambda)
	var rows []MixingRow
	for _, eps := range cfg.Eps {
		beta := eps / 2
		for ti, t := range sweeps {
			src := privacy.NewSeededSource(cfg.Seed*7919 + uint64(ti) + uint64(math.Float64bits(eps)%1009)*131)
			ls := make([]float64, cfg.Reps)
			for r := range ls {
				res, err := orbit.GibbsSample(ctx, src, a, lambda, beta, orbit.GibbsConfig{Sweeps: t, Backend: be})
				if err != nil {
					return nil, err
				}
				ls[r] = opt - orbit.Score(a, res.U, lambda)
			}
			mu := stat.Mean(ls, nil)
			var v float64
			for _, l := range ls {
				v += (l - mu) * (l - mu)
			}
			se := math.Sqrt(v / float64(len(ls)-1) / float64(len(ls)))
			rows = append(rows, MixingRow{D: cfg.D, K: cfg.K, Sweeps: t, Eps: eps, Mean: mu, SE: se, Q90: evaluate.Quantile(0.9, ls),
				Predicted: orbit.PredictedEMLoss(lambda, cfg.D, beta), Runs: len(ls)})
		}
	}
	return rows, nil
}

// WriteMixingMarkdown prints mixing rows as a markdown table.
func WriteMixingMarkdown(w io.Writer, rows []MixingRow) error {
	var b strings.Builder
	b.WriteString("| d | k | ε | sweeps T | mean loss | s.e. | q90 | D/(2β) | runs |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %d | %g | %d | %.4g | %.3g | %.4g | %.4g | %d |\n", r.D, r.K, r.Eps, r.Sweeps, r.Mean, r.SE, r.Q90, r.Predicted, r.Runs)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
