package sdk

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/evaluate"
	"github.com/dplr/dplr/engine/privacy"
)

// Plan is what a fit would spend and an indication of what it would give,
// computed before anything is reserved and without reading the data: the
// estimator is run in process on a public reference data set of the
// request's shape (see PlanOf).
type Plan struct {
	// Steps are the privacy steps the fit takes, in order. Their costs and
	// noise multipliers depend only on the request; a step's Sensitivity
	// and Scale are set only when the sensitivity is public (the same on
	// every data set), zero when it comes from an earlier private release.
	Steps []PlanStep `json:"steps"`
	// Accounting names the composition of the steps' costs ("pure",
	// "zcdp", ...).
	Accounting string `json:"accounting"`
	// Scored: the indicator below was computed.
	Scored bool `json:"scored"`
	// ExpectedScore is the dry runs' mean score on the reference model (1:
	// the true subspace): for rows data the captured-variance ratio, else
	// the subspace overlap ‖ÛᵀU*‖²_F / r. RandomScore is a random
	// r-subspace's expected score on the same scale.
	ExpectedScore float64 `json:"expected_score"`
	RandomScore   float64 `json:"random_score"`
	// NearRandom: the expected score is within NearRandomMargin of a
	// random subspace's (or, when not Scored, the public screen says so:
	// see Screener).
	NearRandom bool `json:"near_random"`
	// Note says what the indicator is, or why it was not computed.
	Note string `json:"note"`
}

// PlanStep is one planned privacy step: the step as the dry run took it
// and, for an additive-noise mechanism (Gaussian, Laplace), its noise
// multiplier Scale / Sensitivity (0 for the exponential mechanism, whose
// cost ε alone fixes its randomness relative to the utility's
// sensitivity).
type PlanStep struct {
	privacy.Step
	Multiplier float64 `json:"noise_multiplier"`
}

// Warning is the one-line warning a fit gives before it spends when the
// plan says its result will be near random ("" otherwise).
func (p Plan) Warning() string {
	if !p.NearRandom {
		return ""
	}
	if !p.Scored { // the public screen decided (Screener)
		return fmt.Sprintf("the plan expects a result near random: %s; consider a larger budget, fewer components or another estimator (see `dplr plan`)", p.Note)
	}
	return fmt.Sprintf("the plan expects a result near random: on a public reference model of this shape the estimator scores %.3f, "+
		"a random subspace %.3f (1 is the true subspace); your data may be easier or harder, but consider a larger budget, "+
		"fewer components or another estimator (see `dplr plan`)", p.ExpectedScore, p.RandomScore)
}

// ReferenceData is a public reference data set and its truth: U, the
// true top-r subspace (p×r), and, for rows data, Sigma, the rows' centred
// covariance (nil for other kinds).
type ReferenceData struct {
	Data  *data.Dataset
	U     *mat.Dense
	Sigma *mat.Dense
}

// Reference draws a public reference data set of shape s for a plan's dry
// run: rank is the request's rank, scale multiplies every value, seed fixes
// the draw.
type Reference func(s Shape, rank int, scale float64, seed uint64) (ReferenceData, error)

// NearRandomMargin is how close to a random subspace's score an expected
// score is near random: a result that captures less than 0.05 more of the
// best rank-r variance than a random subspace does is of no use.
const NearRandomMargin = 0.05

// Dry-run bounds: PlanMaxWork caps a dry run's work over its rows,
// n·p·min(p, 100) (above it the runs are on fewer rows: see PlanOf), and
// PlanMaxCube its work over the p×p matrices, p³ (p up to 1024; above
// it nothing is run; a fit's pre-flight, PlanIndicator, counts the rows'
// work and p³ together against PlanMaxWork: see workShare), PlanTimeout
// the time the dry runs may take together
// (at most 60 % of the time left before the caller's deadline, so that the
// check itself still answers).
const (
	PlanMaxWork = 5e7
	PlanMaxCube = 1 << 30
	PlanTimeout = 6 * time.Second
	// PlanIndicatorTimeout is PlanTimeout for a fit's pre-flight
	// (PlanIndicator), which should not hold the fit up.
	PlanIndicatorTimeout = 2 * time.Second
	// PlanMaxFootprint bounds any dry run's estimated memory.
	PlanMaxFootprint = 256 << 20
)

// PlanMode says which plan is asked for.
type PlanMode int

// Plan modes.
const (
	// PlanNone asks for no plan.
	PlanNone PlanMode = iota
	// PlanFull is dplr plan's: the steps always (from a run on fewer rows
	// above PlanMaxWork), the indicator where the dry runs fit the caps.
	PlanFull
	// PlanIndicator is a fit's pre-flight: only what the near-random
	// warning needs, and only where it is cheap: no reduced run above
	// PlanMaxWork, and PlanIndicatorTimeout.
	PlanIndicator
)

// planNoteLate begins the note of a plan whose dry runs ran out of time.
const planNoteLate = "not computed: the dry run did not finish"

// Late reports whether the plan is missing because its dry runs ran out
// of time: a property of the machine's load, not of the request, so such
// a plan is not worth keeping.
func (p Plan) Late() bool { return strings.HasPrefix(p.Note, planNoteLate) }

// planSeed is the dry runs' fixed, public seed.
const planSeed = 0x706c616e

// PlanOf plans est on request raw, grant g and the public shape s. It
// spends nothing and reads no data: it runs est in process (RunLocal, with
// a fresh accountant for g and a fixed public seed) on draws of ref at
// scales 1 and 4 in turn: eight when they fit in the caps, else two.
// The first run's steps are the plan's steps (their costs
// and multipliers do not depend on the data); a sensitivity is reported
// when the first two runs took the same one. The runs' mean score against
// the model's truth is the expected-accuracy indicator, a model-based
// indication only. Above PlanMaxWork the runs are on fewer rows
// (reducedRun); when p³ is above PlanMaxCube or no run fits
// PlanMaxFootprint, dplr plan's steps (PlanFull) are the declared plan's
// (declaredSteps) and the indicator is not computed; when the runs do not
// finish within PlanTimeout or fail, nothing is planned, and Plan.Note
// says why.
// Before any dry run the estimator's public screen (Screener), where it
// has one, may decide the indicator from the plan's noise alone: a fit's
// pre-flight (PlanIndicator) then runs no dry run, and dplr plan takes
// its verdict where the dry runs give none; Plan.Note says which way the
// indicator was decided.
// An error is a request the estimator refuses on its parameters and shape
// (a dry run's failure is a note: it is about the reference data).
func PlanOf(ctx context.Context, est Estimator, raw map[string]string, g privacy.Grant, s Shape, ref Reference, mode PlanMode) (Plan, error) {
	prep, err := prepare(est.Info(), raw, s)
	if err != nil {
		return Plan{}, err
	}
	sc := screenOf(prep, s, g)
	if mode == PlanIndicator && sc.Verdict != Undecided {
		return Plan{NearRandom: sc.Verdict == CertainlyNearRandom, Note: screenNote(sc)}, nil
	}
	return screened(runPlan(ctx, est, raw, g, s, ref, mode, prep), sc), nil
}

// runPlan is PlanOf's plan from dry runs, within the caps.
func runPlan(ctx context.Context, est Estimator, raw map[string]string, g privacy.Grant, s Shape, ref Reference, mode PlanMode, prep *prepared) Plan {
	fits := 1.0
	if sel := selectionOf(prep.opts); sel != nil {
		fits = float64(len(sel.cands) + 1) // a private selection fits every candidate and the chosen one
	}
	// A run's work, per row and fixed, so that the reduced runs' sizes
	// count a selection's fits too.
	p3, perRow := fits*math.Pow(float64(s.P), 3), fits*float64(s.P)*math.Min(float64(s.P), 100)
	run := s
	if m := rowsFor(1, perRow, p3, mode); m < s.N {
		run.N = m
		if s.Users > 0 {
			run.Users = max(1, int(float64(s.Users)*float64(run.N)/float64(s.N)))
		}
	}
	// A reduced run needs two rows to stand in for many; a data set of one
	// row is its own stand-in.
	dry := run.N >= 2 || run.N == s.N && s.N >= 1
	var footprint int64
	var err error
	if dry {
		_, footprint, err = Prepare(est.Info(), raw, run)
	}
	if !dry || err != nil || footprint > PlanMaxFootprint {
		p := Plan{Note: fmt.Sprintf("not computed: no dry run fits the caps at n = %d, p = %d", s.N, s.P)}
		if mode == PlanFull {
			p = declaredSteps(prep, s, g, p)
		}
		return p
	}
	rank := max(1, boundRank(prep.opts))
	limit := PlanTimeout
	if mode == PlanIndicator {
		limit = PlanIndicatorTimeout
	}
	if d, ok := ctx.Deadline(); ok {
		limit = min(limit, time.Until(d)*6/10)
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	// The dry runs go on their own goroutine so that an estimator slow to
	// notice the deadline cannot hold the pre-flight check past it.
	done := make(chan Plan, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- Plan{Note: fmt.Sprintf("not computed: the dry run panicked: %v", r)}
			}
		}()
		if run.N < s.N {
			done <- reducedRun(ctx, est, raw, g, s, run, ref, rank, perRow, p3, mode)
			return
		}
		done <- dryRuns(ctx, est, raw, g, s, ref, rank, workShare(s.N, perRow, p3, mode), mode)
	}()
	select {
	case p := <-done:
		return p
	case <-ctx.Done():
		return Plan{Note: fmt.Sprintf("%s within %s", planNoteLate, limit.Round(time.Millisecond))}
	}
}

// reducedRun plans a request above PlanMaxWork from runs on references
// with fewer rows (and users) than the data's. The indicator comes from
// dry runs at a budget scaled so that the noise per record is what the
// full data set would get (scaledGrant; k = n/n′, or the users' ratio):
// every step's noise enters the estimate as its sensitivity over the
// number of records, which grows by k at k times fewer records. Eight runs
// on n′ rows when n′ ≥ 4p fits an eighth of the cap, else two at the cap.
// The smaller references carry more sampling error than the data's size
// would, which the reference's strong spikes keep small. For dplr plan
// (PlanFull) the steps come from one more run at the grant itself: their
// costs and multipliers, without sensitivities (which may depend on n).
func reducedRun(ctx context.Context, est Estimator, raw map[string]string, g privacy.Grant, s, run Shape, ref Reference, rank int, perRow, p3 float64, mode PlanMode) Plan {
	small := run
	if m := rowsFor(1.0/8, perRow, p3, mode); m >= 4*s.P && m >= 2 {
		small.N = m
		if s.Users > 0 {
			small.Users = max(1, int(float64(s.Users)*float64(m)/float64(s.N)))
		}
	}
	k := float64(s.N) / float64(small.N)
	if s.Users > 0 && small.Users > 0 {
		k = float64(s.Users) / float64(small.Users)
	}
	ind := Plan{Note: "indicator not computed: no budget gives the reference the data's noise per record"}
	if sg, err := scaledGrant(g, k, est.Info().Grants); err == nil {
		if ind = dryRuns(ctx, est, raw, sg, small, ref, rank, workShare(small.N, perRow, p3, mode), PlanFull); ind.Scored {
			ind.Note = fmt.Sprintf("model-based indicator: the mean score of dry runs on a public reference model of %d rows, "+
				"with the budget scaled so that its noise per row is what your %d rows would get (%s); "+
				"not your data: your data may be easier or harder", small.N, s.N, grantText(sg))
		}
	}
	if mode == PlanIndicator {
		ind.Steps, ind.Accounting = nil, ""
		return ind
	}
	p := dryRuns(ctx, est, raw, g, run, ref, rank, math.Inf(1), PlanFull)
	if len(p.Steps) == 0 && p.Accounting == "" {
		return p
	}
	for i := range p.Steps {
		p.Steps[i].Sensitivity, p.Steps[i].Scale, p.Steps[i].QuerySensitivity, p.Steps[i].Grid = 0, 0, 0, 0
	}
	p.Scored, p.NearRandom, p.ExpectedScore, p.RandomScore = ind.Scored, ind.NearRandom, ind.ExpectedScore, ind.RandomScore
	p.Note = fmt.Sprintf("%s; the steps come from one dry run on a reference of %d rows (their costs and noise multipliers do not "+
		"depend on n for most estimators; sensitivities, which may, are not shown)", ind.Note, run.N)
	return p
}

// declaredSteps is p with the steps of the estimator's declared plan
// (Planner) on shape s under g, one per step of each share with its
// budget, when no dry run can be made: their mechanisms and costs, without
// sensitivities or noise (which the dry run alone shows). p is returned
// unchanged for an undeclared estimator.
func declaredSteps(prep *prepared, s Shape, g privacy.Grant, p Plan) Plan {
	_, plan, err := declare(prep.info, prep.opts, s, g)
	if err != nil || plan == nil {
		return p
	}
	for _, sh := range plan.Shares() {
		b, err := plan.Budget(sh.Name)
		if err != nil {
			return p
		}
		for i := range sh.Steps {
			name := sh.Name
			if sh.Steps > 1 {
				name = fmt.Sprintf("%s (%d of %d)", sh.Name, i+1, sh.Steps)
			}
			p.Steps = append(p.Steps, PlanStep{Step: privacy.Step{Name: name, Mechanism: sh.Mechanism, Calibration: plan.Noise(), Rho: b.Rho, Epsilon: b.Epsilon, Delta: b.Delta}})
		}
	}
	p.Accounting = plan.Noise()
	p.Note += fmt.Sprintf("; the steps are the shares of the estimator's declared plan (noise=%s): each step's budget, without its sensitivity or noise, which only a dry run shows", plan.Noise())
	return p
}

// scaledGrant is g with the noise of every step divided by k: a pure ε
// times k, ρ times k², and an (ε, δ) grant through its Gaussian-DP
// parameter μ times k (a Gaussian step's noise multiplier is 1/μ of its
// share): as the ρ = (kμ)²/2 zCDP grant, whose Gaussian noise is the same
// and whose calibration stays fast at large μ, when the estimator takes
// one; else at the same δ, with μ at most 30 (more noise than the data's
// where noise is already negligible, so the indicator errs low).
func scaledGrant(g privacy.Grant, k float64, accepts []privacy.GrantKind) (privacy.Grant, error) {
	switch g.Kind {
	case privacy.GrantPure:
		g.Epsilon *= k
	case privacy.GrantZCDP:
		g.Rho *= k * k
	case privacy.GrantApprox:
		mu, err := privacy.GDPMu(g.Epsilon, g.Delta)
		if err != nil {
			return g, err
		}
		if slices.Contains(accepts, privacy.GrantZCDP) {
			return privacy.Grant{Kind: privacy.GrantZCDP, Rho: k * k * mu * mu / 2}, nil
		}
		if g.Epsilon, err = privacy.GDPEpsilon(min(k*mu, 30), g.Delta); err != nil {
			return g, err
		}
	}
	return g, g.Validate()
}

// grantText writes g as a user gives it.
func grantText(g privacy.Grant) string {
	switch g.Kind {
	case privacy.GrantPure:
		return fmt.Sprintf("ε = %.3g", g.Epsilon)
	case privacy.GrantZCDP:
		return fmt.Sprintf("ρ = %.3g", g.Rho)
	}
	return fmt.Sprintf("ε = %.3g, δ = %.3g", g.Epsilon, g.Delta)
}

// workShare is the share of the caps that a dry run on n rows takes: for
// dplr plan (PlanFull) the larger of its rows' work over PlanMaxWork and
// its p³ over PlanMaxCube; for a fit's pre-flight, which stays cheap, both
// together over PlanMaxWork.
func workShare(n int, perRow, p3 float64, mode PlanMode) float64 {
	if mode == PlanIndicator {
		return (float64(n)*perRow + p3) / PlanMaxWork
	}
	return max(float64(n)*perRow/PlanMaxWork, p3/PlanMaxCube)
}

// rowsFor is the most rows a dry run may have within share of the caps
// (workShare), 0 when its p³ alone exceeds them.
func rowsFor(share, perRow, p3 float64, mode PlanMode) int {
	if mode == PlanIndicator {
		return max(0, int((share*PlanMaxWork-p3)/perRow))
	}
	if p3 > share*PlanMaxCube {
		return 0
	}
	return int(share * PlanMaxWork / perRow)
}

// dryRuns runs est on draws of ref (see PlanOf) and makes the plan: eight
// runs when eight fit in the caps (work is a run's share of them, see
// workShare; PlanFull only), one when work is infinite (a reduced run),
// two otherwise, side by side on the cores.
func dryRuns(ctx context.Context, est Estimator, raw map[string]string, g privacy.Grant, s Shape, ref Reference, rank int, work float64, mode PlanMode) Plan {
	var (
		n      = 2
		runs   [2][]privacy.Step
		scores []float64
		random float64
		acc    string
	)
	switch {
	case math.IsInf(work, 1):
		n = 1
	case 8*work <= 1 && mode == PlanFull:
		n = 8
	}
	type outcome struct {
		steps       []privacy.Step
		acc         string
		got, random float64
		note        string
	}
	one := func(i int) outcome {
		rd, err := ref(s, rank, []float64{1, 4}[i%2], planSeed+uint64(i))
		if err != nil {
			return outcome{note: fmt.Sprintf("not computed: %v", err)}
		}
		rd.Data.ColumnScaled = s.ColumnScaled // the public facts of the shape, beyond its size, hold for the stand-in too
		seed := uint64(planSeed + 1000 + i)
		res, acct, err := RunLocal(ctx, est, rd.Data, raw, g, LocalOptions{Seed: &seed})
		if err != nil {
			if ctx.Err() != nil {
				return outcome{note: planNoteLate + " in time"}
			}
			return outcome{note: fmt.Sprintf("not computed: the dry run on the reference model failed: %v", err)}
		}
		o := outcome{steps: acct.Steps(), acc: res.Guarantee.Accounting, got: math.NaN()}
		if o.acc == "" {
			o.acc = acct.Achieved().Composition
		}
		for _, m := range res.Matrices {
			if m.Name == "U" && rd.U != nil {
				o.got, o.random = score(m.M, rd)
			}
		}
		return o
	}
	// The runs go side by side, as many at once as there are cores.
	outs := make([]outcome, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, runtime.NumCPU()))
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() {
				if r := recover(); r != nil {
					outs[i] = outcome{note: fmt.Sprintf("not computed: the dry run panicked: %v", r)}
				}
				<-sem
				wg.Done()
			}()
			outs[i] = one(i)
		}()
	}
	wg.Wait()
	for i, o := range outs[:n] {
		if o.note != "" {
			return Plan{Note: o.note}
		}
		if i < 2 {
			runs[i] = o.steps
		}
		acc = o.acc
		if !math.IsNaN(o.got) {
			random = o.random
		}
		scores = append(scores, o.got)
	}
	p := Plan{Accounting: acc}
	for i, st := range runs[0] {
		ps := PlanStep{Step: st}
		if st.Sensitivity > 0 && st.Mechanism != privacy.MechExponential {
			ps.Multiplier = st.Scale / st.Sensitivity
		}
		if len(runs[1]) != len(runs[0]) || runs[1][i].Name != st.Name || runs[1][i].Sensitivity != st.Sensitivity {
			ps.Sensitivity, ps.Scale, ps.QuerySensitivity, ps.Grid = 0, 0, 0, 0
		}
		p.Steps = append(p.Steps, ps)
	}
	var sum float64
	for _, v := range scores {
		sum += v
	}
	if math.IsNaN(sum) {
		p.Note = "not computed: the estimator releases no subspace U to score"
		return p
	}
	p.Scored = true
	p.ExpectedScore = sum / float64(len(scores))
	p.RandomScore = random
	p.NearRandom = p.ExpectedScore-p.RandomScore < NearRandomMargin
	p.Note = fmt.Sprintf("model-based indicator: the mean score of %d dry runs on a public reference model of this shape "+
		"(not your data: your data may be easier or harder)", len(scores))
	return p
}

// score is the score of an estimate u (its column span) against the
// reference's truth, and a random subspace's expected score on the same
// scale: for rows data the captured-variance ratio tr(QᵀΣQ) / tr(U*ᵀΣU*)
// (Q an orthonormal basis of u; what users judge PCA by), whose random
// value is (r/p)·tr(Σ) / tr(U*ᵀΣU*); otherwise the subspace overlap
// ‖QᵀU*‖²_F / r, random r/p. NaN when u cannot be compared.
func score(u *mat.Dense, rd ReferenceData) (got, random float64) {
	p, k := u.Dims()
	_, r := rd.U.Dims()
	if pu, _ := rd.U.Dims(); pu != p || k > p {
		return math.NaN(), math.NaN()
	}
	if rd.Sigma == nil {
		_, sin, err := evaluate.SinTheta(u, rd.U)
		if err != nil {
			return math.NaN(), math.NaN()
		}
		return (float64(min(k, r)) - sin*sin) / float64(r), float64(r) / float64(p)
	}
	var qr mat.QR
	qr.Factorize(u)
	var q mat.Dense
	qr.QTo(&q)
	sigma := mat.NewSymDense(p, nil)
	for i := 0; i < p; i++ {
		for j := i; j < p; j++ {
			sigma.SetSym(i, j, rd.Sigma.At(i, j))
		}
	}
	best := evaluate.CapturedVariance(sigma, rd.U)
	return evaluate.CapturedVariance(sigma, q.Slice(0, p, 0, k)) / best, float64(r) / float64(p) * mat.Trace(sigma) / best
}

// ranked is implemented by bound options that embed Rank (the method is
// promoted through embedding, as selector is).
type ranked interface{ rankValue() int }

// rankValue is the rank the options hold once bound.
func (r Rank) rankValue() int { return r.Value }

// boundRank is the rank the bound options resolved (after the options'
// Check hook has set a default such as FedRep's rank 0 = the estimator's
// own), or 0 when they have none.
func boundRank(opts any) int {
	members := []any{opts}
	if set, ok := opts.(OptionSet); ok {
		members = set
	}
	for _, m := range members {
		if r, ok := m.(ranked); ok {
			return r.rankValue()
		}
	}
	return 0
}
