package fedrep

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// Private hyperparameter selection (DERIVATIONS.md §13): every candidate
// (rank, clip quantile) is fitted on a slice of the budget and on part of
// the users, scored by the other users' leave-one-out validation on their
// own rows, one is chosen by the exponential mechanism, and the
// chosen configuration is fitted again on the rest of the budget.

// selectOptions are the parameters of the private selection.
type selectOptions struct {
	SelectRank     string  `param:"select_rank" default:"none" doc:"comma-separated candidate ranks for private selection (e.g. 2,3,5); none = use rank"`
	SelectQuantile string  `param:"select_clip_quantile" default:"none" doc:"comma-separated candidate clip quantiles for private selection (e.g. 0.25,0.5,0.75); none = use clip_quantile"`
	SelectShare    float64 `param:"select_share" default:"0.3" min:"0.01" max:"0.9" doc:"fraction of the budget spent on the selection: the candidates' fits (4/5 of it, split evenly) and the exponential mechanism (1/5); the chosen configuration is refitted on the rest"`
	SelectUsers    float64 `param:"select_users" default:"0.3" min:"0.05" max:"0.9" doc:"fraction of the users (a data-independent random draw) held out of the candidates' fits and used only to score them, as the final heads will be judged: on rows the representation never saw; the final fit uses every user"`
	SelectScore    string  `param:"select_score" default:"squared" choices:"squared,accuracy" doc:"each user's leave-one-out validation score in [0, 1] on the rows its final head is fitted on (each row predicted by the head fitted on the user's other rows): squared = 1 − mean min(1, squared error); accuracy = fraction of signs predicted (±1 labels)"`
}

// selectConfig is the parsed selection.
type selectConfig struct {
	ranks     []int
	quantiles []float64
	share     float64
	users     float64 // fraction of the users that score (the others fit)
	accuracy  bool
}

// selectFraction is the part of the selection share spent on the
// exponential mechanism.
const selectFraction = 0.2

// parse reads the candidate lists; it returns nil when no selection was
// asked for. Every check uses public quantities only (d, the lists).
func (o *selectOptions) parse(d int, rank int, q float64, clipGiven bool) (*selectConfig, error) {
	if o.SelectRank == "none" && o.SelectQuantile == "none" {
		return nil, nil
	}
	s := &selectConfig{share: o.SelectShare, users: o.SelectUsers, accuracy: o.SelectScore == "accuracy", ranks: []int{rank}, quantiles: []float64{q}}
	if o.SelectRank != "none" {
		s.ranks = nil
		for _, f := range strings.Split(o.SelectRank, ",") {
			r, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || r < 1 || r > d {
				return nil, sdk.BadRequest("select_rank: %q is not a rank between 1 and d = %d", f, d)
			}
			s.ranks = append(s.ranks, r)
		}
	}
	if o.SelectQuantile != "none" {
		if clipGiven {
			return nil, sdk.BadRequest("select_clip_quantile needs the clip chosen privately (do not give clip)")
		}
		s.quantiles = nil
		for _, f := range strings.Split(o.SelectQuantile, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || !(v > 0 && v < 1) {
				return nil, sdk.BadRequest("select_clip_quantile: %q is not in (0, 1)", f)
			}
			s.quantiles = append(s.quantiles, v)
		}
	}
	if len(s.ranks)*len(s.quantiles) > 64 {
		return nil, sdk.BadRequest("private selection: %d candidates (at most 64)", len(s.ranks)*len(s.quantiles))
	}
	return s, nil
}

// candidates returns one configuration per (rank, quantile) pair.
func (s *selectConfig) candidates(c *fedrepConfig) []*fedrepConfig {
	var out []*fedrepConfig
	for _, r := range s.ranks {
		for _, q := range s.quantiles {
			cc := *c
			rounds := *c.rounds
			rounds.Rank.Value = r
			cc.rounds, cc.clipQ, cc.sel = &rounds, q, nil
			cc.label = fmt.Sprintf("candidate %d (rank %d, clip quantile %g): ", len(out)+1, r, q)
			out = append(out, &cc)
		}
	}
	return out
}

// selection is what the selection produced, for the result.
type selection struct {
	nFit, nScore int // users that fit the candidates, users that score them
	chosen       *fedrepConfig
	candidates   []*fedrepConfig
	rhoCands     float64
	rhoSelect    float64
	epsSelect    float64
}

// splitUsers draws, from the run's randomness (data independent), the
// users that score the candidates (a fraction f of the n users, at least
// one, and at least one left to fit) and the users that fit them.
func splitUsers(run *sdk.Run, n int, f float64) (fit, score []int) {
	nv := min(max(1, int(math.Round(f*float64(n)))), n-1)
	perm := run.Rand.Split().Rand().Perm(n)
	score, fit = perm[:nv], perm[nv:]
	slices.Sort(score)
	slices.Sort(fit)
	return fit, score
}

// fitSelected runs the private selection and the final fit.
func fitSelected(ctx context.Context, run *sdk.Run, c *fedrepConfig, prob *fedrepProblem) (*fedrepTrace, *fedrepConfig, *fedrepPlan, *selection, error) {
	n := prob.n()
	if n < 2 {
		return nil, nil, nil, nil, sdk.BadRequest("private selection needs at least 2 users (some fit the candidates, the others score them)")
	}
	fitIdx, scoreIdx := splitUsers(run, n, c.sel.users)
	fitProb, scoreProb := prob.subset(fitIdx), prob.subset(scoreIdx)
	nFit, nScore := len(fitIdx), len(scoreIdx)
	cands := c.sel.candidates(c)
	K := len(cands)
	candWeight := c.sel.share * (1 - selectFraction) / float64(K)
	var shares []privacy.Share
	for j, cc := range cands {
		sh, err := fedrepShares(run, cc, nFit, fmt.Sprintf("candidate %d/", j+1), candWeight)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		shares = append(shares, sh...)
	}
	shares = append(shares, privacy.Share{Name: "select", Weight: c.sel.share * selectFraction, Mechanism: privacy.MechExponential})
	final := *c
	final.sel = nil
	sh, err := fedrepShares(run, &final, n, "final/", 1-c.sel.share)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	shares = append(shares, sh...)
	plan, err := privacy.NewPlan(run.Acct, planNoise(c.noise), shares...)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	sel := &selection{candidates: cands, nFit: nFit, nScore: nScore}
	scores := make([]float64, K)
	for j, cc := range cands {
		cp, err := fedrepBudgets(plan, cc, fmt.Sprintf("candidate %d/", j+1))
		if err != nil {
			return nil, nil, nil, nil, err
		}
		sel.rhoCands += cp.init.Rho + cp.tune.Rho*float64(cp.tunes) + cp.round.Rho*float64(cc.iterations())
		tr, err := privateFedRep(ctx, run, fitProb, cc, cp)
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("selection, candidate %d: %w", j+1, err)
		}
		if scores[j], err = scoreProb.data.validationScore(ctx, tr.uWork.RawMatrix().Data, cc.rank(), cc.split().headAll(), c.sel.accuracy || prob.loss == lossLogistic); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	b, err := plan.Budget("select")
	if err != nil {
		return nil, nil, nil, nil, err
	}
	rel, err := run.Acct.Exponential(fmt.Sprintf("select: exponential mechanism over %d candidates' mean validation scores on %d scoring users", K, nScore), 1/float64(nScore), b)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	sel.rhoSelect, sel.epsSelect = b.Rho, 2*rel.Beta()/float64(nScore)
	best := 0
	err = rel.Sample(func(beta float64) error {
		bestVal := math.Inf(-1)
		for j, f := range scores {
			u := run.Rand.Float64()
			for u == 0 {
				u = run.Rand.Float64()
			}
			if g := beta*f - math.Log(-math.Log(u)); g > bestVal { // Gumbel-max
				best, bestVal = j, g
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	chosen := *cands[best]
	// The final fit chooses its clips again (from its own share) at its own
	// start: reset what the candidate's fit chose.
	chosen.label, chosen.clip, chosen.initClip, chosen.step = "", c.clip, c.initClip, c.step
	sel.chosen = &chosen
	fp, err := fedrepBudgets(plan, &chosen, "final/")
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if err := prob.checkRank(chosen.rank()); err != nil {
		return nil, nil, nil, nil, err
	}
	tr, err := privateFedRep(ctx, run, prob, &chosen, fp)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("selection, final fit: %w", err)
	}
	return tr, &chosen, fp, sel, nil
}

// addSelection states the selection in the result.
func (s *selection) addSelection(res *sdk.Result) {
	res.AddScalar("selected_rank", float64(s.chosen.rank()), sdk.Public, "rank chosen by the private selection")
	res.AddScalar("selected_clip_quantile", s.chosen.clipQ, sdk.Public, "clip quantile chosen by the private selection")
	res.AddScalar("rho_selection", s.rhoCands+s.rhoSelect, sdk.Public, "cost of the selection in zCDP units (ρ): the candidates' fits and the exponential mechanism")
	var names []string
	for _, c := range s.candidates {
		names = append(names, fmt.Sprintf("(rank %d, q %g)", c.rank(), c.clipQ))
	}
	res.Notes = append(res.Notes, fmt.Sprintf("private selection over %d candidates %s: each fitted on %d users with ρ = %.4g, scored on the other %d users (a data-independent random draw) by each user's leave-one-out validation on its own rows, one drawn by the exponential mechanism (ε = %.4g, sensitivity 1/%d); chosen rank %d, clip quantile %g, refitted on every user with the rest of the budget (DERIVATIONS.md §13)",
		len(s.candidates), strings.Join(names, " "), s.nFit, s.rhoCands/float64(len(s.candidates)), s.nScore, s.epsSelect, s.nScore, s.chosen.rank(), s.chosen.clipQ))
}
