package sdk

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
)

// screenedOptions plan one Gaussian share and answer the screen's verdict
// their parameter names, after checking that they were given the plan.
type screenedOptions struct {
	Verdict string `param:"verdict" default:"undecided" choices:"undecided,near,far,fail" doc:"the screen's answer"`
}

func (o *screenedOptions) Plan(Shape, privacy.Grant) (PlanSpec, error) {
	return PlanSpec{Noise: privacy.NoiseZCDP, Shares: []privacy.Share{{Name: "moment", Rest: true, Mechanism: privacy.MechGaussian}}}, nil
}

func (o *screenedOptions) Screen(_ Shape, plan *privacy.Plan, g privacy.Grant) (Screen, error) {
	if b, err := plan.Budget("moment"); err != nil || b.Rho != g.Rho {
		return Screen{}, errors.New("not the fit's plan")
	}
	switch o.Verdict {
	case "near":
		return Screen{Verdict: CertainlyNearRandom, Why: "noise above every signal"}, nil
	case "far":
		return Screen{Verdict: CertainlyFar, Why: "noise below the gap"}, nil
	case "fail":
		return Screen{Verdict: CertainlyNearRandom}, errors.New("cannot tell")
	}
	return Screen{}, nil
}

// screenedEst spends the moment share and releases the reference's true
// subspace (e₁), counting its fits.
type screenedEst struct{ fits *atomic.Int64 }

func (screenedEst) Info() Info {
	return Info{Name: "screened", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantZCDP}, Options: screenedOptions{}}
}

func (e screenedEst) Fit(_ context.Context, run *Run) (*Result, error) {
	e.fits.Add(1)
	b, err := run.Plan.Budget("moment")
	if err != nil {
		return nil, err
	}
	if _, err := run.Acct.Gaussian("moment", 1, 1, b); err != nil {
		return nil, err
	}
	_, p := run.Data.X.Dims()
	u := mat.NewDense(p, 1, nil)
	u.Set(0, 0, 1)
	res := &Result{}
	res.AddMatrix("U", u, Public, "subspace")
	return res, nil
}

// TestPlanOfScreen: a decided screen spares a fit's pre-flight every dry
// run and sets its indicator (its note says so, and a near-random one
// warns); dplr plan still runs its dry runs and says whether the screen
// agrees, and takes the screen's verdict above the caps; an undecided or
// failing screen changes nothing.
func TestPlanOfScreen(t *testing.T) {
	ref := func(s Shape, _ int, scale float64, _ uint64) (ReferenceData, error) {
		x := mat.NewDense(s.N, s.P, nil)
		for i := range s.N {
			x.Set(i, i%s.P, scale*float64(i+1))
		}
		u := mat.NewDense(s.P, 1, nil)
		u.Set(0, 0, 1)
		return ReferenceData{Data: &data.Dataset{Kind: data.Rows, X: x}, U: u}, nil
	}
	grant := privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.5}
	small, wide := Shape{Kind: data.Rows, N: 8, P: 4}, Shape{Kind: data.Rows, N: 10, P: 1100}
	for _, tc := range []struct {
		verdict string
		mode    PlanMode
		shape   Shape
		runs    bool // dry runs ran
		near    bool
		note    string
	}{
		{"near", PlanIndicator, small, false, true, ScreenDecided + ", without a dry run: near random (noise above every signal)"},
		{"far", PlanIndicator, small, false, false, ScreenDecided + ", without a dry run: far from random (noise below the gap)"},
		{"undecided", PlanIndicator, small, true, false, "model-based indicator"},
		{"fail", PlanIndicator, small, true, false, "model-based indicator"},
		{"far", PlanFull, small, true, false, "; the public screen agrees: noise below the gap"},
		{"near", PlanFull, small, true, false, "; the public screen disagrees: noise above every signal"},
		{"near", PlanFull, wide, false, true, "shows; " + ScreenDecided},
		{"far", PlanIndicator, wide, false, false, ScreenDecided},
	} {
		est := screenedEst{fits: new(atomic.Int64)}
		p, err := PlanOf(context.Background(), est, map[string]string{"verdict": tc.verdict}, grant, tc.shape, ref, tc.mode)
		require.NoError(t, err)
		name := tc.verdict + " " + tc.note
		assert.Equal(t, tc.runs, est.fits.Load() > 0, name)
		assert.Equal(t, tc.runs, p.Scored, name)
		assert.Equal(t, tc.near, p.NearRandom, name)
		assert.Contains(t, p.Note, tc.note, name)
		if tc.near {
			assert.True(t, strings.HasPrefix(p.Warning(), "the plan expects a result near random: "), name)
			assert.Contains(t, p.Warning(), "noise above every signal", name)
		}
		if tc.mode == PlanFull {
			assert.NotEmpty(t, p.Steps, name)
		}
	}
}

// RowsNearRandom decides near random exactly when the edge is at least
// four times the reference's spike θ = 1/(4r) + 1/(4p) (16θ), from 64
// features and for 1 ≤ r < p; otherwise it is undecided, never far.
func TestRowsNearRandom(t *testing.T) {
	theta := func(p, r int) float64 { return 1/(4*float64(r)) + 1/(4*float64(p)) }
	for _, c := range []struct {
		name string
		p, r int
		edge float64
		want Verdict
	}{
		{"at the threshold", 100, 3, 16 * theta(100, 3), CertainlyNearRandom},
		{"just below", 100, 3, 16 * theta(100, 3) * 0.999, Undecided},
		{"far above", 784, 10, 100, CertainlyNearRandom},
		{"too few features", 63, 3, 100, Undecided},
		{"rank zero", 100, 0, 100, Undecided},
		{"rank p", 100, 100, 100, Undecided},
		{"no noise", 100, 3, 0, Undecided},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := RowsNearRandom(c.p, c.r, c.edge)
			assert.Equal(t, c.want, sc.Verdict)
			if c.want == CertainlyNearRandom {
				assert.Contains(t, sc.Why, "spectral edge")
			}
		})
	}
}
