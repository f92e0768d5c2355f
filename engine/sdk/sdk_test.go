package sdk

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
)

var testSpecs = []ParamSpec{
	{Name: "rank", Type: Int, Required: true, Min: Bound(1), Doc: "rank"},
	{Name: "clip", Type: Float, Default: "1", Min: Bound(1e-12), Max: Bound(100), Doc: "clip"},
	{Name: "calibration", Type: String, Default: "zcdp", Choices: []string{"zcdp", "paper"}, Doc: "calibration"},
	{Name: "psd", Type: Bool, Default: "false", Doc: "psd"},
	{Name: "beta", Type: Float, Doc: "optional, unset by default"},
}

func TestValidateParams(t *testing.T) {
	cases := []struct {
		name string
		raw  map[string]string
		want string // error substring; "" for success
	}{
		{"defaults filled", map[string]string{"rank": "2"}, ""},
		{"all set", map[string]string{"rank": "3", "clip": "2.5", "calibration": "paper", "psd": "true", "beta": "1e-6"}, ""},
		{"missing required", map[string]string{"clip": "2"}, `parameter "rank" is required`},
		{"unknown name", map[string]string{"rank": "2", "rnak": "2"}, `unknown parameter "rnak" (known: rank, clip, calibration, psd, beta)`},
		{"int not integer", map[string]string{"rank": "1.5"}, `"1.5" is not an integer`},
		{"int below min", map[string]string{"rank": "0"}, "below its minimum 1"},
		{"float not number", map[string]string{"rank": "1", "clip": "abc"}, `"abc" is not a number`},
		{"float NaN", map[string]string{"rank": "1", "clip": "NaN"}, `"NaN" is not a number`},
		{"float +Inf", map[string]string{"rank": "1", "clip": "inf"}, `"inf" is not a finite number`},
		{"float -Inf on unbounded", map[string]string{"rank": "1", "beta": "-Infinity"}, `"-Infinity" is not a finite number`},
		{"float overflow", map[string]string{"rank": "1", "beta": "1e999"}, `"1e999" is not a number`},
		{"float above max", map[string]string{"rank": "1", "clip": "101"}, "above its maximum 100"},
		{"bad choice", map[string]string{"rank": "1", "calibration": "davis"}, `"davis" is not one of zcdp, paper`},
		{"bad bool", map[string]string{"rank": "1", "psd": "maybe"}, `"maybe" is not true or false`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ValidateParams(testSpecs, tc.raw)
			if tc.want != "" {
				assert.ErrorContains(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			assert.Positive(t, p.Int("rank"))
			assert.True(t, p.Has("clip"), "defaults are filled")
			assert.Equal(t, tc.raw["beta"] != "", p.Has("beta"), "a parameter without default stays unset")
		})
	}
	_, err := ValidateParams(testSpecs, nil)
	var missing *MissingParamError
	require.ErrorAs(t, err, &missing)
	assert.Equal(t, "rank", missing.Name)
}

func TestCheckSpecs(t *testing.T) {
	cases := []struct {
		name  string
		specs []ParamSpec
		want  string
	}{
		{"valid, required first", testSpecs, ""},
		{"no params", nil, ""},
		{"empty name", []ParamSpec{{Type: Int}}, "has no name"},
		{"duplicate", []ParamSpec{{Name: "k", Type: Int}, {Name: "k", Type: Float}}, `"k" is listed twice`},
		{"unknown type", []ParamSpec{{Name: "k", Type: "matrix"}}, `unknown type "matrix"`},
		{"min above max", []ParamSpec{{Name: "k", Type: Float, Min: Bound(2), Max: Bound(1)}}, "minimum 2 exceeds maximum 1"},
		// A bad default after a required parameter is still found.
		{"bad default after required", []ParamSpec{{Name: "rank", Type: Int, Required: true}, {Name: "clip", Type: Float, Default: "x"}}, `default: parameter "clip"`},
		{"default out of range", []ParamSpec{{Name: "clip", Type: Float, Default: "0", Min: Bound(1)}}, "below its minimum"},
		{"default not a choice", []ParamSpec{{Name: "c", Type: String, Default: "b", Choices: []string{"a"}}}, "not one of a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckSpecs(tc.specs)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// fakeEst is a configurable estimator for RunLocal's checks.
type fakeEst struct {
	info Info
	fit  func(ctx context.Context, run *Run) (*Result, error)
}

func (f fakeEst) Info() Info { return f.info }

func (f fakeEst) Fit(ctx context.Context, run *Run) (*Result, error) { return f.fit(ctx, run) }

func TestRunLocal(t *testing.T) {
	rows := &data.Dataset{Kind: data.Rows, X: mat.NewDense(4, 2, []float64{1, 0, 0, 1, 1, 1, 0, 0})}
	grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	info := Info{Name: "fake", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantApprox},
		Params: []ParamSpec{{Name: "clip", Type: Float, Default: "1"}}}
	spend := func(_ context.Context, run *Run) (*Result, error) {
		rho, err := run.Acct.TotalRho()
		if err != nil {
			return nil, err
		}
		rel, err := run.Acct.Gaussian("s", 1, 2, privacy.Budget{Noise: privacy.NoiseZCDP, Rho: rho})
		if err != nil {
			return nil, err
		}
		v := []float64{0, 0}
		if err := rel.Add(run.Rand, v); err != nil {
			return nil, err
		}
		res := &Result{}
		res.AddMatrix("v", mat.NewDense(1, 2, v), Public, "noisy zero")
		return res, nil
	}
	seed := uint64(3)
	cases := []struct {
		name  string
		info  func(Info) Info
		fit   func(context.Context, *Run) (*Result, error)
		data  *data.Dataset
		grant privacy.Grant
		raw   map[string]string
		want  string
	}{
		{name: "ok", fit: spend},
		{name: "panic becomes an error", fit: func(context.Context, *Run) (*Result, error) { panic("index out of range") }, want: "estimator panicked: index out of range"},
		{name: "wrong data kind", fit: spend, data: &data.Dataset{Kind: data.Trace, X: mat.NewDense(1, 4, nil), Y: []float64{1}, D1: 2, D2: 2}, want: "takes rows data, got trace data"},
		{name: "no data", fit: spend, data: nil, want: "no data set"},
		{name: "grant kind refused", fit: spend, grant: privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1}, want: "does not accept a pure budget"},
		{name: "invalid grant", fit: spend, grant: privacy.Grant{Kind: privacy.GrantApprox, Epsilon: -1, Delta: 1e-6}, want: "epsilon"},
		{name: "bad parameter", fit: spend, raw: map[string]string{"clip": "inf"}, want: "not a finite number"},
		{name: "nil result", fit: func(context.Context, *Run) (*Result, error) { return nil, nil }, want: "returned no result"},
		{name: "estimator error is wrapped", fit: func(context.Context, *Run) (*Result, error) { return nil, context.Canceled }, want: "estimator fake: context canceled"},
		{name: "non-private estimator declaring a step", info: func(i Info) Info { i.NonPrivate = true; return i }, fit: spend, want: "marked non-private but declared 1 privacy steps"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := info
			if tc.info != nil {
				in = tc.info(in)
			}
			d := rows
			if tc.data != nil || tc.name == "no data" {
				d = tc.data
			}
			g := grant
			if tc.grant.Kind != "" {
				g = tc.grant
			}
			res, acct, err := RunLocal(context.Background(), fakeEst{info: in, fit: tc.fit}, d, tc.raw, g, LocalOptions{Seed: &seed})
			if tc.want != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.want)
				assert.Nil(t, res)
				if tc.name == "estimator error is wrapped" {
					assert.True(t, errors.Is(err, context.Canceled), "the estimator's error stays in the chain")
				}
				refusal := map[string]bool{"wrong data kind": true, "grant kind refused": true, "invalid grant": true, "bad parameter": true}
				assert.Equal(t, refusal[tc.name], IsBadRequest(err), "refusals of the request are marked as such, failures are not")
				return
			}
			require.NoError(t, err)
			require.Len(t, acct.Steps(), 1)
			assert.Equal(t, privacy.Approx, res.Guarantee.Kind, "the SDK fills the kind from the composition")
			assert.Equal(t, privacy.MethodGDP, res.Guarantee.Accounting, "a Gaussian-only run composes exactly")
			assert.True(t, res.Guarantee.Seeded)
			assert.Less(t, res.Guarantee.Epsilon, 1.0, "ε, δ come from the tightest accounting")
			assert.Greater(t, res.Guarantee.Epsilon, 0.9)
			assert.Equal(t, 1e-6, res.Guarantee.Delta)
		})
	}
}

func TestBadRequest(t *testing.T) {
	base := errors.New("underlying")
	err := BadRequest("lambda: %w", base)
	assert.True(t, IsBadRequest(err))
	assert.ErrorIs(t, err, base, "BadRequest wraps with %%w")
	assert.Equal(t, "lambda: underlying", err.Error())
	assert.True(t, IsBadRequest(fmt.Errorf("context: %w", err)), "still recognised when wrapped")
	assert.False(t, IsBadRequest(base))
	assert.False(t, IsBadRequest(nil))
}

// fakeRemote is a fakeEst with a path through aggregation passes.
type fakeRemote struct{ fakeEst }

func (fakeRemote) Passes(any, Shape) ([]string, error) { return []string{"rows.clipped_sum"}, nil }

// TestRunLocalBytes: rows kept as bytes reach an estimator with a path
// through passes as they are (X nil, read by its passes), and one without
// such a path as X decoded; both see the same shape.
func TestRunLocalBytes(t *testing.T) {
	xb, err := data.NewBytes(2, 2, []byte{1, 2, 3, 4}, 0.5)
	require.NoError(t, err)
	d := &data.Dataset{Kind: data.Rows, XBytes: xb}
	info := Info{Name: "fake", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantApprox}, NonPrivate: true}
	var seen *data.Dataset
	fit := func(_ context.Context, run *Run) (*Result, error) {
		seen = run.Data
		return &Result{}, nil
	}
	grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	_, _, err = RunLocal(context.Background(), fakeEst{info: info, fit: fit}, d, nil, grant, LocalOptions{})
	require.NoError(t, err)
	require.NotNil(t, seen.X)
	assert.Equal(t, []float64{0.5, 1, 1.5, 2}, seen.X.RawMatrix().Data)
	assert.Nil(t, d.X, "the caller's data set is not changed")
	_, _, err = RunLocal(context.Background(), fakeRemote{fakeEst{info: info, fit: fit}}, d, nil, grant, LocalOptions{})
	require.NoError(t, err)
	assert.Same(t, d, seen)
	assert.Equal(t, Shape{Kind: data.Rows, N: 2, P: 2}, ShapeOf(d))
}
