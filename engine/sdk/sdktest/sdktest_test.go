package sdktest

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

type opts struct {
	sdk.Clip `default:"1"`
	Share    float64 `param:"share" default:"1" gt:"0" max:"1" doc:"part of the budget used"`
	Mode     string  `param:"mode" default:"good" choices:"good,undrawn,drift,unlabelled,timing,lie" doc:"how to misbehave"`
	K        *int    `param:"k" min:"1" lt:"10" doc:"optional"`
}

// Plan implements sdk.Planner: one Gaussian release, except in mode lie,
// which plans a Laplace step instead (and spends outside its plan).
func (o *opts) Plan(sdk.Shape, privacy.Grant) (sdk.PlanSpec, error) {
	m := privacy.MechGaussian
	if o.Mode == "lie" {
		m = privacy.MechLaplace
	}
	return sdk.PlanSpec{Noise: privacy.NoiseZCDP, Shares: []privacy.Share{{Name: "v", Weight: o.Share, Mechanism: m}}}, nil
}

// est is a configurable estimator: good by default, misbehaving on request.
type est struct {
	legacy bool
	calls  *atomic.Int64
}

func (e est) Info() sdk.Info {
	in := sdk.Info{Name: "sdktest-fake", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantApprox, privacy.GrantZCDP}}
	if e.legacy {
		in.Params = []sdk.ParamSpec{{Name: "clip", Type: sdk.Float, Default: "1", Min: sdk.Bound(1e-9), Doc: "clip"}}
	} else {
		in.Options = opts{}
	}
	return in
}

func (e est) Fit(_ context.Context, run *sdk.Run) (*sdk.Result, error) {
	res := &sdk.Result{}
	v := []float64{0, 0}
	if e.legacy {
		// A step declared through the raw accountant, not a release.
		sigma, err := privacy.GaussianSigmaForRho(1, 0.01)
		if err != nil {
			return nil, err
		}
		st := privacy.Step{Name: "v", Mechanism: privacy.MechGaussian, Calibration: privacy.NoiseZCDP, Sensitivity: 1, Scale: sigma, Rho: 0.01, Dim: 2}
		if err := run.Acct.Spend(st); err != nil {
			return nil, err
		}
		run.Rand.AddGaussian(v, sigma)
		res.AddMatrix("v", mat.NewDense(1, 2, v), sdk.Public, "noisy zeros")
		return res, nil
	}
	o := sdk.Opts[opts](run)
	plan := run.Plan
	if o.Mode == "lie" {
		var err error
		if plan, err = privacy.NewPlan(run.Acct, privacy.NoiseZCDP, privacy.Share{Name: "v", Weight: o.Share}); err != nil {
			return nil, err
		}
	}
	b, _ := plan.Budget("v")
	rel, err := run.Acct.Gaussian("v", o.Clip.Value, 2, b)
	if err != nil {
		return nil, err
	}
	if o.Mode != "undrawn" {
		if err := rel.Add(run.Rand, v); err != nil {
			return nil, err
		}
	}
	rel2 := sdk.Public
	if o.Mode == "unlabelled" {
		rel2 = ""
	}
	res.AddMatrix("v", mat.NewDense(1, 2, v), rel2, "noisy zeros")
	if o.Mode == "timing" {
		res.AddScalar("sampler_seconds", 0, sdk.Public, "a timing labelled public")
	}
	if o.Mode == "drift" {
		res.AddScalar("calls", float64(e.calls.Add(1)), sdk.Public, "differs between runs")
	}
	return res, nil
}

func rows() *data.Dataset { return &data.Dataset{Kind: data.Rows, X: mat.NewDense(50, 2, nil)} }

var grant = privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}

func TestGoodEstimatorPasses(t *testing.T) {
	Run(t, est{calls: new(atomic.Int64)},
		Case{Name: "default", Data: rows(), Grant: grant},
		Case{Name: "ρ grant", Data: rows(), Grant: privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.5}, Params: map[string]string{"k": "3", "share": "0.5"}},
		Case{Name: "large δ", Data: rows(), Grant: privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 0.1}, Refuse: "not small against the 50 rows"},
	)
}

func TestFindings(t *testing.T) {
	cases := []struct {
		name  string
		est   est
		cases []Case
		want  []string
	}{
		{"legacy estimator", est{legacy: true}, []Case{{Name: "c", Data: rows(), Grant: grant}},
			[]string{"catalogue of sdktest-fake is hand-written", "steps declared without a release (Spend*): [v]"}},
		{"undrawn release", est{}, []Case{{Name: "c", Data: rows(), Grant: grant, Params: map[string]string{"mode": "undrawn"}}},
			[]string{"releases declared but never drawn: [v]"}},
		{"seed does not reproduce", est{calls: new(atomic.Int64)}, []Case{{Name: "c", Data: rows(), Grant: grant, Params: map[string]string{"mode": "drift"}}},
			[]string{`the same seed did not reproduce the fit: scalar "calls": 1 vs 2`}},
		{"unlabelled output", est{}, []Case{{Name: "c", Data: rows(), Grant: grant, Params: map[string]string{"mode": "unlabelled"}}},
			[]string{`matrix output "v" has release class ""`}},
		{"public timing", est{}, []Case{{Name: "c", Data: rows(), Grant: grant, Params: map[string]string{"mode": "timing"}}},
			[]string{`output "sampler_seconds" looks like a timing but is labelled public`}},
		{"refusal accepted", est{}, []Case{{Name: "c", Data: rows(), Grant: grant}, {Name: "bad", Data: rows(), Grant: grant, Refuse: "x"}},
			[]string{`case "bad": request map[] was accepted`}},
		{"no cases", est{}, nil, []string{"no cases"}},
		{"false declaration", est{}, []Case{{Name: "c", Data: rows(), Grant: grant, Params: map[string]string{"mode": "lie"}}},
			[]string{`mechanisms: privacy step 1 ("v") uses the gaussian mechanism, which the estimator did not declare before the fit (it declared: laplace (v))`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := Check(tc.est, tc.cases...)
			var msgs []string
			for _, e := range errs {
				msgs = append(msgs, e.Error())
			}
			all := strings.Join(msgs, "\n")
			for _, w := range tc.want {
				assert.Contains(t, all, w)
			}
			assert.Len(t, errs, len(tc.want), all)
		})
	}
}

// The bad requests are derived from the catalogue.
func TestBadRequestsFromCatalogue(t *testing.T) {
	info, err := sdk.InfoOf(est{})
	if !assert.NoError(t, err) {
		return
	}
	var got []string
	for _, b := range badRequests(info, map[string]string{"share": "0.5"}) {
		got = append(got, fmt.Sprintf("%s %v", b.what, b.raw))
	}
	assert.Equal(t, []string{
		"an unknown parameter map[sdktest_no_such_parameter:1 share:0.5]",
		"clip=not-a-number map[clip:not-a-number share:0.5]",
		"clip=0 map[clip:0 share:0.5]",
		"share=not-a-number map[share:not-a-number]",
		"share=2 map[share:2]",
		"share=0 map[share:0]",
		"mode=sdktest-not-a-choice map[mode:sdktest-not-a-choice share:0.5]",
		"k=1.5 map[k:1.5 share:0.5]",
		"k=0 map[k:0 share:0.5]",
		"k=10 map[k:10 share:0.5]",
		"allow_large_delta=maybe map[allow_large_delta:maybe share:0.5]",
	}, got)
}

// RunDeclared wants the declaration to be exactly what the fit used.
func TestCheckDeclaredExactly(t *testing.T) {
	assert.Empty(t, CheckDeclaredExactly(est{}, Case{Name: "good", Data: rows(), Grant: grant}))
	errs := CheckDeclaredExactly(est{}, Case{Name: "lie", Data: rows(), Grant: grant, Params: map[string]string{"mode": "lie"}})
	if assert.Len(t, errs, 2) {
		assert.Contains(t, errs[0].Error(), "uses the gaussian mechanism, which the estimator did not declare")
		assert.Contains(t, errs[1].Error(), "declares the laplace mechanism (laplace (v)), which the fit did not use")
	}
	errs = CheckDeclaredExactly(est{legacy: true}, Case{Name: "undeclared", Data: rows(), Grant: grant})
	if assert.Len(t, errs, 1) {
		assert.Contains(t, errs[0].Error(), "declares no mechanisms")
	}
}

// remoteEst is a rows estimator that runs on remote data: the clipped sum
// of its rows through one pass, and with twin set a second path on rows in
// memory that differs from the pass.
type remoteEst struct{ twin bool }

func (remoteEst) Info() sdk.Info {
	return sdk.Info{Name: "sdktest-remote", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantApprox}, NonPrivate: true}
}

func (remoteEst) Passes(any, sdk.Shape) ([]string, error) { return []string{pass.RowsClippedSum}, nil }

func (e remoteEst) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	r, err := run.Pass(ctx, pass.RowsClippedSumKind.EncodeRequest(pass.ShapeOf(run.Data), pass.ClippedSumRequest{Clip: 1}))
	if err != nil {
		return nil, err
	}
	sum, _ := r.Output("sum")
	if e.twin && run.Data.X != nil {
		sum.Data[0] += 1e-9
	}
	res := &sdk.Result{Guarantee: privacy.Guarantee{Kind: privacy.None}}
	res.AddMatrix("sum", mat.NewDense(1, len(sum.Data), sum.Data), sdk.Evaluation, "clipped sum")
	return res, nil
}

// A remote estimator releases through passes what it releases on the
// rows; one whose in-memory path differs is flagged.
func TestThroughPasses(t *testing.T) {
	x := mat.NewDense(20, 2, nil)
	for i := 0; i < 20; i++ {
		x.SetRow(i, []float64{float64(i), 1})
	}
	c := Case{Name: "c", Data: &data.Dataset{Kind: data.Rows, X: x}, Grant: grant}
	assert.Empty(t, Check(remoteEst{}, c))
	errs := Check(remoteEst{twin: true}, c)
	if assert.Len(t, errs, 1) {
		assert.Contains(t, errs[0].Error(), `through passes: matrix "sum" differs at (0, 0)`)
	}
}
