package sdk

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
)

// sampleOptions is shaped like a real estimator's options: shared fields,
// overrides on the embedding field, own fields, optional pointers.
type sampleOptions struct {
	Rank
	Clip        `default:"1" doc:"row-norm bound"`
	Center      //
	Noise       `choices:"zcdp,analytic"`
	OutputSigma bool     `param:"output_sigma" doc:"also return the p×p covariance"`
	MeanShare   float64  `param:"mean_share" default:"0.1" min:"0.001" max:"0.9" doc:"share of the budget for the mean"`
	MeanClip    *float64 `param:"mean_clip" gt:"0" doc:"clip for the mean (default: clip)"`
	Sweeps      *int     `param:"sweeps" min:"1" lt:"1000" doc:"optional sweep count"`
	//lint:ignore U1000 present to show that SpecsOf skips untagged unexported fields
	scratch []float64
}

func (o *sampleOptions) Check(s Shape) error {
	if o.Rank.Value > s.P {
		return errors.New("rank exceeds the number of columns")
	}
	return nil
}

func (o *sampleOptions) Footprint(s Shape) int64 { return int64(8 * s.P * s.P) }

// sharedDoc is the doc of a shared parameter.
func sharedDoc(t *testing.T, shared any) string {
	t.Helper()
	specs, err := SpecsOf(shared)
	require.NoError(t, err)
	require.Len(t, specs, 1)
	return specs[0].Doc
}

// The hand-written catalogue sampleOptions stands for.
func sampleSpecs(t *testing.T) []ParamSpec {
	return []ParamSpec{
		{Name: "rank", Type: Int, Required: true, Min: Bound(1), Doc: "rank of the estimate: the number of directions it keeps"},
		{Name: "clip", Type: Float, Default: "1", ExclusiveMin: Bound(0), Doc: "row-norm bound"},
		{Name: "center", Type: String, Default: "none", Choices: []string{"none", "private"},
			Doc: "none: use the data as given; private: first subtract a mean released privately (it costs part of the budget)"},
		{Name: "noise", Type: String, Default: "zcdp", Choices: []string{"zcdp", "analytic"},
			Doc: sharedDoc(t, Noise{})},
		{Name: "output_sigma", Type: Bool, Default: "false", Doc: "also return the p×p covariance"},
		{Name: "mean_share", Type: Float, Default: "0.1", Min: Bound(0.001), Max: Bound(0.9), Doc: "share of the budget for the mean"},
		{Name: "mean_clip", Type: Float, ExclusiveMin: Bound(0), Doc: "clip for the mean (default: clip)"},
		{Name: "sweeps", Type: Int, Min: Bound(1), ExclusiveMax: Bound(1000), Doc: "optional sweep count"},
	}
}

func TestSpecsOfDerivesTheHandWrittenCatalogue(t *testing.T) {
	specs, err := SpecsOf(sampleOptions{})
	require.NoError(t, err)
	assert.Equal(t, sampleSpecs(t), specs)
	ptr, err := SpecsOf(&sampleOptions{})
	require.NoError(t, err)
	assert.Equal(t, specs, ptr, "a pointer prototype gives the same catalogue")
}

type optionalK struct {
	V *int `param:"k"`
}

type twoParams struct {
	A int `param:"a" default:"1"`
	B int `param:"b" default:"2"`
}

func TestSpecsOfRefusals(t *testing.T) {
	cases := []struct {
		name string
		opts any
		want string
	}{
		{"not a struct", 3, "must be a struct"},
		{"unsupported type", struct {
			X []int `param:"x"`
		}{}, "is not a parameter type"},
		{"optional bool", struct {
			X *bool `param:"x"`
		}{}, "is not a parameter type"},
		{"unexported parameter", struct {
			x int `param:"x" default:"1"`
		}{}, "must be exported"},
		{"pointer with default", struct {
			X *float64 `param:"x" default:"1"`
		}{}, "optional (pointer) parameter has no default"},
		{"required pointer", struct {
			X *int `param:"x" required:"true"`
		}{}, "required parameter is not a pointer"},
		{"silent zero", struct {
			X float64 `param:"x"`
		}{}, `"x" needs a default or required`},
		{"tags without a name", struct {
			X float64 `default:"1"`
		}{}, "has parameter tags but no param name"},
		{"override on a multi-parameter struct", struct {
			twoParams `default:"3"`
		}{}, "override a single parameter, but it holds 2"},
		{"choices on an int", struct {
			X int `param:"x" default:"1" choices:"1,2"`
		}{}, "choices on a int parameter"},
		{"bound on a string", struct {
			X string `param:"x" default:"a" min:"1"`
		}{}, "min bound on a string parameter"},
		{"bad bound", struct {
			X float64 `param:"x" default:"1" gt:"zero"`
		}{}, `gt:"zero" is not a number`},
		{"bad required", struct {
			X float64 `param:"x" required:"yes"`
		}{}, `required:"yes" is not true or false`},
		{"duplicate name", struct {
			Rank
			K int `param:"rank" default:"1"`
		}{}, `"rank" is listed twice`},
		{"default outside choices", struct {
			Noise `default:"fancy"`
		}{}, `"fancy" is not one of`},
		{"default on the exclusive bound", struct {
			Clip `default:"0"`
		}{}, "must be greater than 0"},
		{"empty range", struct {
			X float64 `param:"x" default:"1" gt:"1" max:"1"`
		}{}, "bounds leave no value"},
		{"default override on an optional", struct {
			optionalK `default:"1"`
		}{}, "optional (pointer) parameter has no default"},
		{"tags on a named struct field", struct {
			P twoParams `default:"1"`
		}{}, "has parameter tags but no param name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := SpecsOf(tc.opts)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestPrepareBindsAndRefuses(t *testing.T) {
	info := Info{Name: "sample", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantZCDP}, Options: sampleOptions{}}
	shape := Shape{Kind: data.Rows, N: 100, P: 4}
	two, three := 2.0, 3
	cases := []struct {
		name  string
		raw   map[string]string
		shape Shape
		want  string // error substring; "" for success
		check func(t *testing.T, o *sampleOptions)
	}{
		{name: "defaults", raw: map[string]string{"rank": "2"}, check: func(t *testing.T, o *sampleOptions) {
			assert.Equal(t, sampleOptions{Rank: Rank{2}, Clip: Clip{1}, Center: Center{"none"}, Noise: Noise{"zcdp"}, MeanShare: 0.1}, *o)
		}},
		{name: "everything set", raw: map[string]string{"rank": "4", "clip": "2.5", "center": "private", "noise": "analytic",
			"output_sigma": "true", "mean_share": "0.9", "mean_clip": "2", "sweeps": "3"}, check: func(t *testing.T, o *sampleOptions) {
			assert.Equal(t, sampleOptions{Rank: Rank{4}, Clip: Clip{2.5}, Center: Center{"private"}, Noise: Noise{"analytic"},
				OutputSigma: true, MeanShare: 0.9, MeanClip: &two, Sweeps: &three}, *o)
		}},
		{name: "misspelt key", raw: map[string]string{"rank": "2", "mean_shar": "0.2"}, want: `unknown parameter "mean_shar"`},
		{name: "missing required", raw: map[string]string{}, want: `parameter "rank" is required`},
		{name: "below min", raw: map[string]string{"rank": "2", "mean_share": "0.0001"}, want: "below its minimum 0.001"},
		{name: "above max", raw: map[string]string{"rank": "2", "mean_share": "0.95"}, want: "above its maximum 0.9"},
		{name: "exclusive lower bound", raw: map[string]string{"rank": "2", "clip": "0"}, want: `"clip": 0 must be greater than 0`},
		{name: "exclusive bound on an optional", raw: map[string]string{"rank": "2", "mean_clip": "-1"}, want: "must be greater than 0"},
		{name: "exclusive upper bound", raw: map[string]string{"rank": "2", "sweeps": "1000"}, want: "must be less than 1000"},
		{name: "choice narrowed by the override", raw: map[string]string{"rank": "2", "noise": "classical"}, want: `"classical" is not one of zcdp, analytic`},
		{name: "not an integer", raw: map[string]string{"rank": "2.5"}, want: "is not an integer"},
		{name: "check hook", raw: map[string]string{"rank": "5"}, want: "rank exceeds the number of columns"},
		{name: "wrong data kind", raw: map[string]string{"rank": "2"}, shape: Shape{Kind: data.Trace, N: 10, P: 4}, want: "takes rows data, got trace data"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := shape
			if tc.shape.Kind != "" {
				s = tc.shape
			}
			opts, fp, err := Prepare(info, tc.raw, s)
			if tc.want != "" {
				require.Error(t, err)
				assert.ErrorContains(t, err, tc.want)
				assert.True(t, IsBadRequest(err), "refusals are BadRequest")
				return
			}
			require.NoError(t, err)
			o, ok := opts.(*sampleOptions)
			require.True(t, ok, "%T", opts)
			assert.Equal(t, int64(8*4*4), fp)
			tc.check(t, o)
		})
	}
}

func TestInfoOfAndBuiltins(t *testing.T) {
	est := fakeEst{info: Info{Name: "sample", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantApprox}, Options: sampleOptions{}}}
	info, err := InfoOf(est)
	require.NoError(t, err)
	assert.Equal(t, append(sampleSpecs(t), allowLargeDeltaSpec), info.Params)
	again, err := resolveInfo(info)
	require.NoError(t, err, "resolving twice is harmless")
	assert.Equal(t, info.Params, again.Params)

	both := est.info
	both.Params = []ParamSpec{{Name: "x", Type: Int, Default: "1"}}
	_, err = resolveInfo(both)
	assert.ErrorContains(t, err, "sets both Options and Params")

	zcdpOnly := est.info
	zcdpOnly.Grants = []privacy.GrantKind{privacy.GrantZCDP}
	info, err = resolveInfo(zcdpOnly)
	require.NoError(t, err)
	assert.False(t, hasParam(info.Params, ParamAllowLargeDelta), "only estimators taking an (ε, δ) budget get allow_large_delta")
}

func TestInclusiveFoldsExclusiveBounds(t *testing.T) {
	cases := []struct {
		spec       ParamSpec
		pass, fail []string
	}{
		{ParamSpec{Name: "clip", Type: Float, ExclusiveMin: Bound(0)}, []string{"5e-324", "1"}, []string{"0", "-1"}},
		{ParamSpec{Name: "share", Type: Float, ExclusiveMin: Bound(0), ExclusiveMax: Bound(1)}, []string{"0.5", "0.9999999999999999"}, []string{"0", "1"}},
		{ParamSpec{Name: "k", Type: Int, ExclusiveMin: Bound(2.5), ExclusiveMax: Bound(7)}, []string{"3", "6"}, []string{"2", "7"}},
		{ParamSpec{Name: "k", Type: Int, Min: Bound(4), ExclusiveMin: Bound(2)}, []string{"4"}, []string{"3"}},
	}
	for _, tc := range cases {
		folded := tc.spec.Inclusive()
		assert.Nil(t, folded.ExclusiveMin)
		assert.Nil(t, folded.ExclusiveMax)
		assert.Contains(t, folded.Doc, "(must be ")
		for _, v := range tc.pass {
			assert.NoError(t, checkValue(tc.spec, v), "%s=%s", tc.spec.Name, v)
			assert.NoError(t, checkValue(folded, v), "folded %s=%s", tc.spec.Name, v)
		}
		for _, v := range tc.fail {
			assert.Error(t, checkValue(tc.spec, v), "%s=%s", tc.spec.Name, v)
			assert.Error(t, checkValue(folded, v), "folded %s=%s", tc.spec.Name, v)
		}
	}
	plain := ParamSpec{Name: "x", Type: Float, Min: Bound(1), Doc: "d"}
	assert.Equal(t, plain, plain.Inclusive())
}

func TestOptsInFit(t *testing.T) {
	rows := &data.Dataset{Kind: data.Rows, X: mat.NewDense(3, 4, nil)}
	var got *sampleOptions
	var wrong *struct{ X int }
	est := fakeEst{
		info: Info{Name: "sample", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantZCDP}, Options: sampleOptions{}},
		fit: func(_ context.Context, run *Run) (*Result, error) {
			got = Opts[sampleOptions](run)
			wrong = Opts[struct{ X int }](run)
			rel, err := run.Acct.Gaussian("x", 1, 1, privacy.Budget{Noise: privacy.NoiseZCDP, Rho: 0.1})
			if err != nil {
				return nil, err
			}
			return &Result{}, rel.Add(run.Rand, []float64{0})
		},
	}
	seed := uint64(1)
	_, _, err := RunLocal(context.Background(), est, rows, map[string]string{"rank": "3", "mean_clip": "0.5"}, privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1}, LocalOptions{Seed: &seed})
	require.NoError(t, err)
	require.NotNil(t, got)
	assert.Equal(t, 3, got.Rank.Value)
	require.NotNil(t, got.MeanClip)
	assert.Equal(t, 0.5, *got.MeanClip)
	assert.Nil(t, got.Sweeps)
	assert.Nil(t, wrong)
	assert.Nil(t, Opts[sampleOptions](nil))

	// A refusal by the Check hook happens before any step.
	_, acct, err := RunLocal(context.Background(), est, rows, map[string]string{"rank": "9"}, privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1}, LocalOptions{Seed: &seed})
	assert.True(t, IsBadRequest(err))
	assert.Nil(t, acct, "refused before an accountant exists")
	assert.False(t, math.IsNaN(0))
}

type evaluateOptions struct {
	Evaluate
}

func (evaluateOptions) Footprint(s Shape) int64 { return int64(s.P) }

// wrapped adds the evaluate parameter to the estimator it wraps, the way
// a plugin adds an evaluation step to several estimators.
type wrapped struct{ Estimator }

func (w wrapped) Info() Info {
	in := w.Estimator.Info()
	in.Options = OptionSet{in.Options, evaluateOptions{}}
	return in
}

func (w wrapped) Fit(ctx context.Context, run *Run) (*Result, error) {
	res, err := w.Estimator.Fit(ctx, run)
	if err != nil {
		return nil, err
	}
	if Opts[evaluateOptions](run).Evaluate.Value {
		res.AddScalar("evaluated", 1, Evaluation, "the wrapper ran")
	}
	return res, nil
}

func TestOptionSet(t *testing.T) {
	var inner *sampleOptions
	base := fakeEst{
		info: Info{Name: "sample", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantZCDP}, Options: sampleOptions{}},
		fit: func(_ context.Context, run *Run) (*Result, error) {
			inner = Opts[sampleOptions](run)
			rel, err := run.Acct.Gaussian("x", 1, 1, privacy.Budget{Noise: privacy.NoiseZCDP, Rho: 0.1})
			if err != nil {
				return nil, err
			}
			return &Result{}, rel.Add(run.Rand, []float64{0})
		},
	}
	est := wrapped{base}
	info, err := InfoOf(est)
	require.NoError(t, err)
	assert.Equal(t, "evaluate", info.Params[len(sampleSpecs(t))].Name, "the wrapper's parameters follow the estimator's")

	opts, fp, err := Prepare(est.Info(), map[string]string{"rank": "2", "evaluate": "true"}, Shape{Kind: data.Rows, N: 10, P: 4})
	require.NoError(t, err)
	set, ok := opts.(OptionSet)
	require.True(t, ok, "%T", opts)
	require.Len(t, set, 2)
	assert.Equal(t, int64(8*4*4+4), fp, "footprints add up")
	_, _, err = Prepare(est.Info(), map[string]string{"rank": "7"}, Shape{Kind: data.Rows, N: 10, P: 4})
	assert.ErrorContains(t, err, "rank exceeds the number of columns", "each member's Check runs")

	seed := uint64(1)
	res, _, err := RunLocal(context.Background(), est, &data.Dataset{Kind: data.Rows, X: mat.NewDense(10, 4, nil)},
		map[string]string{"rank": "3", "evaluate": "true"}, privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1}, LocalOptions{Seed: &seed})
	require.NoError(t, err)
	require.NotNil(t, inner)
	assert.Equal(t, 3, inner.Rank.Value)
	assert.Equal(t, "evaluated", res.Scalars[0].Name)

	_, err = SpecsOf(OptionSet{sampleOptions{}, struct{ Rank }{}})
	assert.ErrorContains(t, err, `"rank" is listed twice`)
}

type renamedOptions struct {
	Noise       `choices:"exact,zcdp" default:"exact"`
	Sensitivity `choices:"worst-case,paper" default:"worst-case"`
	Share       float64 `param:"share" default:"1" gt:"0" max:"1"`
	_           Renamed `param:"calibration" renamed:"noise"`
	_           Renamed `param:"mode" renamed:"sensitivity, noise"`
	_           Renamed `param:"weight" renamed:"share"`
	Reps        int     `param:"reps" default:"1"`
	_           Renamed `param:"repeats" renamed:"reps"`
}

// A former name is in the catalogue, takes no value, and a request that
// uses it is refused before the fit with an error naming the replacement
// and its values; the current names still work.
func TestRenamedParameter(t *testing.T) {
	specs, err := SpecsOf(renamedOptions{})
	require.NoError(t, err)
	byName := map[string]ParamSpec{}
	for _, s := range specs {
		byName[s.Name] = s
	}
	assert.Equal(t, []string{"noise"}, byName["calibration"].RenamedTo)
	assert.Equal(t, []string{"sensitivity", "noise"}, byName["mode"].RenamedTo)
	assert.Equal(t, String, byName["calibration"].Type)
	assert.Empty(t, byName["calibration"].Default)

	fits := 0
	est := fakeEst{
		info: Info{Name: "renamed", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantZCDP}, Options: renamedOptions{}},
		fit: func(_ context.Context, run *Run) (*Result, error) {
			fits++
			rel, err := run.Acct.Gaussian("x", 1, 1, privacy.Budget{Noise: privacy.NoiseZCDP, Rho: 0.1})
			if err != nil {
				return nil, err
			}
			return &Result{}, rel.Add(run.Rand, []float64{0})
		},
	}
	rows := &data.Dataset{Kind: data.Rows, X: mat.NewDense(10, 1, nil)}
	grant := privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1}
	for _, tc := range []struct {
		name string
		raw  map[string]string
		want string // "" = accepted
	}{
		{"new name", map[string]string{"noise": "zcdp"}, ""},
		{"no parameter", nil, ""},
		{"renamed, choices listed", map[string]string{"calibration": "zcdp"}, "calibration= was renamed noise= (values: exact, zcdp)"},
		{"renamed alongside its replacement", map[string]string{"calibration": "zcdp", "noise": "zcdp"}, "calibration= was renamed noise="},
		{"split into two", map[string]string{"mode": "paper"}, "mode= was replaced by sensitivity= (values: worst-case, paper) and noise= (values: exact, zcdp)"},
		{"renamed number", map[string]string{"weight": "0.5"}, "weight= was renamed share= (a number)"},
		{"renamed integer", map[string]string{"repeats": "2"}, "repeats= was renamed reps= (an integer)"},
		{"empty value", map[string]string{"calibration": ""}, "calibration= was renamed noise="},
		{"misspelt is not renamed", map[string]string{"calibrate": "zcdp"}, `unknown parameter "calibrate"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := fits
			_, _, err := RunLocal(context.Background(), est, rows, tc.raw, grant, LocalOptions{})
			if tc.want == "" {
				require.NoError(t, err)
				assert.Equal(t, before+1, fits)
				return
			}
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
			assert.True(t, IsBadRequest(err), "a former name is a usage error")
			assert.Equal(t, before, fits, "refused before the fit")
			assert.NotContains(t, err.Error(), "known: calibration")
		})
	}
}

// Malformed renames are refused when the catalogue is derived.
func TestRenamedDeclarations(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts any
		want string
	}{
		{"unknown target", struct {
			Noise
			_ Renamed `param:"calibration" renamed:"noize"`
		}{}, `renamed to "noize", which is not a current parameter`},
		{"target is a former name", struct {
			Noise
			_ Renamed `param:"a" renamed:"noise"`
			_ Renamed `param:"b" renamed:"a"`
		}{}, `renamed to "a", which is not a current parameter`},
		{"no target", struct {
			Noise
			_ Renamed `param:"calibration"`
		}{}, `needs param:"old" and renamed:"new"`},
		{"value tags", struct {
			Noise
			_ Renamed `param:"calibration" renamed:"noise" default:"zcdp"`
		}{}, "takes no default tag"},
		{"renamed on a value field", struct {
			Noise
			Old string `param:"calibration" default:"x" renamed:"noise"`
		}{}, "renamed is a tag of a Renamed field"},
		{"clashes with a current name", struct {
			Noise
			_ Renamed `param:"noise" renamed:"noise"`
		}{}, `"noise" is listed twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := SpecsOf(tc.opts)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}
