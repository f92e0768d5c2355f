// Command dplr-beam fits a dplr estimator on data too large for one
// machine: an Apache Beam pipeline (the embedded prism runner by default;
// Flink, Spark or Dataflow through Beam's portable runners) computes the
// estimator's clipped statistics and the data set's source identity from
// sharded files, and the release runs on those statistics alone, charged
// to the same budget ledger, under the same source identity, as
// `dplr fit` on the one file holding the same rows.
//
//	dplr-beam fit pca-analyze-gauss --data 'shards/*.npy' --epsilon 1 --delta 1e-6 --set rank=5 --set clip=1
//
// Progress goes to stderr; the result (JSON) to --out or stdout. A failed
// pipeline spends nothing (the ledger is only opened after it succeeds);
// a release that fails after its reservation is settled as any failed fit
// (refunded when no noise was drawn).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/beam/stats"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/host"
	"github.com/dplr/dplr/engine/ledger"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/pca"
)

// fromStats is an estimator that runs on rows statistics.
type fromStats struct {
	info sdk.Info
	fit  func(context.Context, *sdk.Run, map[string]string, *mat.SymDense, int) (*sdk.Result, error)
	// clipped says whether the estimator's guarantee needs the rows
	// clipped to the clip parameter (else they are aggregated unclipped).
	clipped bool
}

var estimators = map[string]fromStats{
	"pca-analyze-gauss": {pca.AnalyzeGauss{}.Info(), pca.AnalyzeGaussFromCov, true},
	"pca-cxz":           {pca.CXZ{}.Info(), pca.CXZFromCov, false},
}

type setFlags map[string]string

func (s setFlags) String() string { return fmt.Sprint(map[string]string(s)) }
func (s setFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("--set %q: want name=value", v)
	}
	s[k] = val
	return nil
}

func main() {
	beam.Init()
	os.Exit(run(os.Args[1:]))
}

// Exit codes as dplr fit: 2 usage, 3 budget, 1 other failures.
func run(args []string) int {
	if len(args) < 2 || args[0] != "fit" {
		fmt.Fprintln(os.Stderr, "usage: dplr-beam fit ESTIMATOR --data GLOB [--runner prism|flink|spark|dataflow] [--epsilon E --delta D | --rho R] [--set name=value]... [--seed N] [--home DIR] [--out FILE]")
		return 2
	}
	name := args[1]
	fs := flag.NewFlagSet("dplr-beam fit", flag.ContinueOnError)
	dataGlob := fs.String("data", "", "shards: a glob of .npy or CSV files on any filesystem Beam knows")
	runner := fs.String("runner", "prism", "Beam runner: prism (embedded, the only one tested here), flink, spark, dataflow; their usual Beam flags follow (e.g. --endpoint, --project, --region, --temp_location)")
	tempDir := fs.String("temp", "", "where the pipeline writes its one aggregate (reachable from workers and driver; default a local temporary directory)")
	eps := fs.Float64("epsilon", 0, "ε of an (ε, δ) grant")
	delta := fs.Float64("delta", 0, "δ of an (ε, δ) grant")
	rho := fs.Float64("rho", 0, "ρ of a zCDP grant")
	seed := fs.String("seed", "", "fixed seed (the result is then not private against whoever knows it)")
	home := fs.String("home", "", "dplr home holding the budget ledger (default as dplr)")
	out := fs.String("out", "", "result file (JSON; default stdout)")
	sets := setFlags{}
	fs.Var(sets, "set", "estimator parameter name=value (repeatable)")
	if err := fs.Parse(args[2:]); err != nil {
		return 2
	}
	est, ok := estimators[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "dplr-beam: estimator %q has no from-statistics path (have pca-analyze-gauss, pca-cxz)\n", name)
		return 2
	}
	if *dataGlob == "" {
		fmt.Fprintln(os.Stderr, "dplr-beam: --data is required")
		return 2
	}
	var grant privacy.Grant
	switch {
	case *rho > 0:
		grant = privacy.Grant{Kind: privacy.GrantZCDP, Rho: *rho}
	case *delta > 0:
		grant = privacy.Grant{Kind: privacy.GrantApprox, Epsilon: *eps, Delta: *delta}
	default:
		grant = privacy.Grant{Kind: privacy.GrantPure, Epsilon: *eps}
	}
	if err := grant.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "dplr-beam: budget: %v\n", err)
		return 2
	}
	var seedp *uint64
	if *seed != "" {
		v, err := strconv.ParseUint(*seed, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "dplr-beam: --seed: %v\n", err)
			return 2
		}
		seedp = &v
	}
	clip := math.Inf(1)
	if est.clipped {
		c, err := clipParam(est.info, sets)
		if err != nil {
			fmt.Fprintf(os.Stderr, "dplr-beam: %v\n", err)
			return 2
		}
		clip = c
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }

	t0 := time.Now()
	st, err := stats.ComputeRows(ctx, *dataGlob, clip, stats.Options{Runner: stats.Runner(*runner), TempDir: *tempDir, Progress: logf})
	if err != nil {
		fmt.Fprintf(os.Stderr, "dplr-beam: %v\nnothing was spent\n", err)
		return 1
	}
	logf("beam: statistics in %.1f s", time.Since(t0).Seconds())
	res, code := release(ctx, name, est, st, sets, grant, seedp, *home, logf)
	if code != 0 {
		return code
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		fmt.Fprintf(os.Stderr, "dplr-beam: %v\n", err)
		return 1
	}
	if *out == "" {
		fmt.Println(string(b))
		return 0
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "dplr-beam: %v\n", err)
		return 1
	}
	return 0
}

// clipParam is the estimator's clip parameter (its default when unset).
func clipParam(info sdk.Info, sets map[string]string) (float64, error) {
	v, ok := sets["clip"]
	if !ok {
		for _, p := range info.Params {
			if p.Name == "clip" {
				v = p.Default
			}
		}
	}
	c, err := strconv.ParseFloat(v, 64)
	if err != nil || !(c > 0) {
		return 0, fmt.Errorf("clip %q: want a positive number", v)
	}
	return c, nil
}

// output is what dplr-beam reports.
type output struct {
	Estimator string                 `json:"estimator"`
	Source    dataio.Identity        `json:"source"`
	N         int64                  `json:"n"`
	P         int                    `json:"p"`
	Clipped   int64                  `json:"rows_clipped"`
	Guarantee privacy.Guarantee      `json:"guarantee"`
	Steps     []privacy.Step         `json:"steps"`
	Matrices  map[string][][]float64 `json:"matrices"`
	Scalars   map[string]float64     `json:"scalars,omitempty"`
	Notes     []string               `json:"notes,omitempty"`
}

// release reserves the grant under the source identity, runs the
// estimator on the statistics and settles the ledger as dplr fit does.
func release(ctx context.Context, name string, est fromStats, st *stats.RowStats, raw map[string]string, grant privacy.Grant, seed *uint64, home string, logf func(string, ...any)) (*output, int) {
	id := st.ID.Identity()
	shape := sdk.Shape{Kind: data.Rows, N: int(st.N), P: st.P}
	if _, _, err := sdk.Prepare(est.info, raw, shape); err != nil {
		logf("dplr-beam: %v", err)
		return nil, 2
	}
	if _, err := sdk.CheckGrant(est.info, raw, shape, grant); err != nil {
		logf("dplr-beam: %v", err)
		return nil, 2
	}
	if home == "" {
		h, err := ledger.HomeDir()
		if err != nil {
			logf("dplr-beam: %v", err)
			return nil, 1
		}
		home = h
	}
	led, err := ledger.Open(ctx, home)
	if err != nil {
		logf("dplr-beam: opening the budget ledger: %v", err)
		return nil, 1
	}
	defer led.Close()
	key := host.BudgetKey(dataio.Handle{Source: &id})
	runID, err := led.Reserve(ctx, key, ledger.ReserveRequest{Estimator: name, Plugin: "dplr-beam", Params: raw, Grant: grant, Relation: ledger.ReplaceRow})
	if err != nil {
		logf("dplr-beam: %v; nothing was run or spent", err)
		if errors.Is(err, ledger.ErrBudgetExceeded) || errors.Is(err, ledger.ErrIncompatible) || errors.Is(err, ledger.ErrRelation) {
			return nil, 3
		}
		return nil, 1
	}
	_ = led.SetSketch(ctx, key, id.Sketch)
	acct, err := privacy.NewAccountant(grant)
	var res *sdk.Result
	var src *privacy.Source
	if err == nil {
		if seed != nil {
			src = privacy.NewSeededSource(*seed)
		} else {
			src, err = privacy.NewSecureSource()
		}
	}
	if err == nil {
		res, err = est.fit(ctx, &sdk.Run{Acct: acct, Rand: src, Backend: backend.Default()}, raw, st.SecondMoment(), int(st.N))
	}
	if err == nil {
		err = res.CheckReleases()
	}
	var g privacy.Guarantee
	if err == nil {
		g, err = privacy.Certify(res.Guarantee, grant, acct.Steps())
		g.Seeded = src.Seeded()
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err != nil {
		drawn := acct != nil && len(acct.Steps()) > 0
		_ = led.Settle(sctx, runID, ledger.Outcome{Status: ledger.Failed, Steps: []privacy.Step{}, NoiseDrawn: drawn, Error: err.Error()})
		logf("dplr-beam: release failed: %v (%s)", err, map[bool]string{true: "the grant stays charged: noise was drawn", false: "refunded: no noise was drawn"}[drawn])
		return nil, 1
	}
	if err := led.Settle(sctx, runID, ledger.Outcome{Status: ledger.Succeeded, Steps: acct.Steps(), Guarantee: g.Kind, Neighbours: g.Neighbours}); err != nil {
		logf("dplr-beam: settling the ledger (the run stays charged; results not released): %v", err)
		return nil, 1
	}
	o := &output{Estimator: name, Source: id, N: st.N, P: st.P, Clipped: st.Clipped, Guarantee: g, Steps: acct.Steps(),
		Matrices: map[string][][]float64{}, Scalars: map[string]float64{}, Notes: res.Notes}
	for _, m := range res.Matrices {
		r, c := m.M.Dims()
		rows := make([][]float64, r)
		for i := range rows {
			rows[i] = make([]float64, c)
			mat.Row(rows[i], i, m.M)
		}
		o.Matrices[m.Name] = rows
	}
	for _, s := range res.Scalars {
		o.Scalars[s.Name] = s.Value
	}
	return o, 0
}
