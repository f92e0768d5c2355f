package pca

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// clip=auto with center=private declares, for pca-analyze-gauss, three
// quantile steps (the mean's first clip, its second about the first mean,
// the clip of the centred rows), the mean's two steps and the estimate,
// and releases clip, mean_clip, mean_radius and the 1×p mean; pca-amin's
// pure split has a one-step mean and two quantiles. Both spend the whole
// grant; a numeric clip declares no quantile step.
func TestClipAutoPlanAndOutputs(t *testing.T) {
	g := spiked(t, 3000, 8, 2, "24,20", "gaussian", 7)
	cases := []struct {
		name  string
		est   sdk.Estimator
		raw   map[string]string
		grant privacy.Grant
		steps []string
	}{
		{"gauss auto centred", AnalyzeGauss{}, map[string]string{"rank": "2", "center": "private"}, approx(1, 1e-6),
			[]string{"clip quantile (mean)", "mean (first step)", "clip quantile (mean, about the first step)", "mean (second step, about the first)", "clip quantile", "second-moment matrix Σ̂ + E"}},
		{"gauss auto", AnalyzeGauss{}, map[string]string{"rank": "2"}, approx(1, 1e-6),
			[]string{"clip quantile", "second-moment matrix Σ̂ + E"}},
		{"gauss given clip", AnalyzeGauss{}, map[string]string{"rank": "2", "clip": "7"}, approx(1, 1e-6),
			[]string{"second-moment matrix Σ̂ + E"}},
		{"amin auto centred", Amin{}, map[string]string{"rank": "2", "center": "private"}, pure(2),
			[]string{"clip quantile (mean)", "mean", "clip quantile", "eigenvalues", "eigenvector 1", "eigenvector 2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, acct := fit(t, c.est, g, c.raw, c.grant, 3)
			var names []string
			for _, s := range acct.Steps() {
				names = append(names, s.Name)
			}
			assert.Equal(t, c.steps, names)
			assert.Empty(t, acct.Undrawn())
			clip := scalar(t, res, "clip")
			assert.Positive(t, clip)
			if c.raw["clip"] == "7" {
				assert.Equal(t, 7.0, clip)
			}
			if c.raw["center"] == "private" {
				mean := matrix(t, res, "mean")
				r, p := mean.Dims()
				assert.Equal(t, []int{1, 8}, []int{r, p})
				assert.Positive(t, scalar(t, res, "mean_clip"))
				if _, ok := c.est.(AnalyzeGauss); ok { // two steps under a Gaussian plan, one under pca-amin's pure split
					// Each step's declared sensitivity is 2·(its clip)/n:
					// the first clips the rows about 0 to mean_clip, the
					// second their offsets from the first (public) mean to
					// mean_radius (DERIVATIONS.md §5.2).
					n := float64(g.Data.N())
					for _, s := range acct.Steps() {
						switch s.Name {
						case "mean (first step)":
							assert.InEpsilon(t, 2*scalar(t, res, "mean_clip")/n, s.QuerySensitivity, 1e-12)
						case "mean (second step, about the first)":
							assert.InEpsilon(t, 2*scalar(t, res, "mean_radius")/n, s.QuerySensitivity, 1e-12)
						}
					}
				}
			}
		})
	}
}

// The automatic clip lands near the chosen quantile of the norms of the
// (centred) rows, a range check over seeds; spending is refused when
// clip_share + mean_share leave too little.
func TestClipAutoValue(t *testing.T) {
	g := spiked(t, 20000, 10, 2, "24,20", "gaussian", 9)
	n, _ := g.Data.X.Dims()
	norms := make([]float64, n)
	for i := range norms {
		norms[i] = kernel.Norm(g.Data.X.RawRowView(i))
	}
	sorted := append([]float64(nil), norms...)
	sort.Float64s(sorted)
	med := sorted[len(sorted)/2]
	for seed := uint64(1); seed <= 5; seed++ {
		res, _ := fit(t, AnalyzeGauss{}, g, map[string]string{"rank": "2"}, approx(1, 1e-6), seed)
		assert.InEpsilon(t, med, scalar(t, res, "clip"), 0.1)
	}
	_, _, err := sdk.RunLocal(context.Background(), AnalyzeGauss{}, g.Data,
		map[string]string{"rank": "2", "center": "private", "clip_share": "0.5", "mean_share": "0.5"}, approx(1, 1e-6), sdk.LocalOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "clip_share")
	_, _, err = sdk.RunLocal(context.Background(), AnalyzeGauss{}, g.Data, map[string]string{"rank": "2", "clip": "big"}, approx(1, 1e-6), sdk.LocalOptions{})
	require.Error(t, err)
}

// clip_share's default is sized to the rows (clip.DefaultShare): on 200
// rows at ε = 1 the quantile steps take 0.3 of the budget (ρ for
// pca-analyze-gauss, ε for pca-amin's pure split), on 3000 rows 0.1, as
// with clip_share given; either way the run spends exactly its plan.
func TestClipShareSizedToRows(t *testing.T) {
	for _, c := range []struct {
		name  string
		est   sdk.Estimator
		grant privacy.Grant
		n     int
		raw   map[string]string
		want  float64
	}{
		{"gauss 200 rows", AnalyzeGauss{}, approx(1, 1e-6), 200, map[string]string{"rank": "2", "center": "private", "noise": "zcdp"}, 0.3},
		{"gauss 3000 rows", AnalyzeGauss{}, approx(1, 1e-6), 3000, map[string]string{"rank": "2", "center": "private", "noise": "zcdp"}, 0.1},
		{"gauss 200 rows, given", AnalyzeGauss{}, approx(1, 1e-6), 200, map[string]string{"rank": "2", "center": "private", "noise": "zcdp", "clip_share": "0.1"}, 0.1},
		{"amin 200 rows", Amin{}, pure(1), 200, map[string]string{"rank": "2", "center": "private"}, 0.3},
		{"amin 3000 rows", Amin{}, pure(1), 3000, map[string]string{"rank": "2", "center": "private"}, 0.1},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := spiked(t, c.n, 8, 2, "24,20", "gaussian", 5)
			_, acct := fit(t, c.est, g, c.raw, c.grant, 1)
			assert.Empty(t, acct.Undrawn())
			assert.InDelta(t, c.want, fractionOf(acct, c.grant, "clip quantile"), 1e-9)
		})
	}
}

// fractionOf is the fraction of a run's cost (ρ, or ε under a pure grant)
// taken by the steps whose names start with prefix.
func fractionOf(acct *privacy.Accountant, g privacy.Grant, prefix string) float64 {
	var part, total float64
	for _, s := range acct.Steps() {
		v := s.Rho
		if g.Kind == privacy.GrantPure {
			v = s.Epsilon
		}
		total += v
		if strings.HasPrefix(s.Name, prefix) {
			part += v
		}
	}
	return part / total
}

// The private mean's default share is 0.2 of ρ, 0.3 when the columns were
// divided by the user's public scales (data.Dataset.ColumnScaled), and
// mean_share or pca-amin's pure split overrides it; each run spends its
// plan exactly, whatever the flag.
func TestMeanShareOfColumnScaledTables(t *testing.T) {
	gauss := map[string]string{"rank": "2", "center": "private", "noise": "zcdp"}
	for _, c := range []struct {
		name   string
		est    sdk.Estimator
		grant  privacy.Grant
		scaled bool
		raw    map[string]string
		want   float64
	}{
		{"gauss", AnalyzeGauss{}, approx(1, 1e-6), false, gauss, 0.2},
		{"gauss, column scales", AnalyzeGauss{}, approx(1, 1e-6), true, gauss, 0.3},
		{"gauss, column scales, given", AnalyzeGauss{}, approx(1, 1e-6), true, map[string]string{"rank": "2", "center": "private", "noise": "zcdp", "mean_share": "0.2"}, 0.2},
		{"amin, column scales", Amin{}, pure(1), true, map[string]string{"rank": "2", "center": "private"}, 0.1},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := spiked(t, 3000, 8, 2, "24,20", "gaussian", 5)
			d := *g.Data
			d.ColumnScaled = c.scaled
			g.Data = &d
			_, acct := fit(t, c.est, g, c.raw, c.grant, 1)
			assert.Empty(t, acct.Undrawn())
			assert.InDelta(t, c.want, fractionOf(acct, c.grant, "mean"), 1e-9)
		})
	}
}
