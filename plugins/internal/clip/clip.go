// Package clip holds the row-norm bound every worst-case estimator of the
// pca and orbit plugins embeds: a public clip, or clip=auto, a private
// quantile of the row norms released with the exponential mechanism from
// their counts on a public grid. The clipping itself and the norm counts
// are kernels of engine/kernel.
package clip

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/plugins/internal/quantile"
)

// AutoValue is the clip value that asks for a private quantile of the row
// norms (plugins/pca/DERIVATIONS.md §6).
const AutoValue = "auto"

// ShareName names the plan share that pays for the private clip quantiles.
const ShareName = "norm quantile (clip=auto)"

// Options are the clipping parameters every worst-case rows estimator of
// the pca and orbit plugins embeds: a public clip, or clip=auto (a private
// quantile of the row norms bought with clip_share of the budget and
// released as the output "clip"). Call Parse in the options' Check.
type Options struct {
	Clip         string   `param:"clip" default:"auto" doc:"row-norm bound: rows longer than it are scaled down to it, which is what bounds one person's influence. auto (the default): spend clip_share of the budget on a private clip_quantile-quantile of the row norms (of the centred rows with center=private) and use it; the chosen value is released as output clip. A number: your own public bound, chosen without looking at the private data (it then costs nothing)"`
	ClipShare    *float64 `param:"clip_share" min:"0.001" max:"0.5" doc:"with clip=auto (or an automatic mean clip): the fraction of the budget spent on the private norm quantiles (default: 0.1, raised up to 0.3 when the rows are too few for each quantile to find its value at 0.1; a function of n, the number of quantiles and the grant only)"`
	ClipQuantile float64  `param:"clip_quantile" default:"0.5" gt:"0" lt:"1" doc:"with clip=auto: which quantile of the row norms becomes the clip (0.5: the median norm). clip_share's default is sized for the median: a quantile q far from it needs about (0.5/min(q, 1−q))² times the share under an (ε, δ) or ρ grant (that factor, not squared, under a pure one) on a few hundred rows"`

	value float64 // the public clip; 0 with clip=auto
}

// The bounds of clip_share's default (Share).
const (
	MinShare = 0.1 // the default wherever the quantiles locate their values at it
	MaxShare = 0.3 // the most the default takes on small data
)

// Share is clip_share, or its default for k private quantiles of n rows
// (DefaultShare between MinShare and MaxShare, in a plan whose weights are
// fractions of the grant's ε when pure, of its ρ otherwise). others is the
// weight the plan's other preprocessing shares take: the default never
// leaves the estimate less than half of the grant (nor goes below
// MinShare).
func (o *Options) Share(n, k int, g privacy.Grant, pure bool, others float64) float64 {
	if o.ClipShare != nil {
		return *o.ClipShare
	}
	return DefaultShare(n, k, g, pure, MinShare, max(MinShare, min(MaxShare, 0.5-others)))
}

// DefaultShare is the smallest weight in [lo, hi] at which each of k
// private medians of n records, drawn with the exponential mechanism on
// kernel.DefaultGrid from an equal part of the weight, reaches the inverse
// temperature quantile.LocatingBeta at its nominal conversion:
// β = ε/(2k) of the weight's ε in a pure plan, √(2ρ/k) of its ρ otherwise
// (an exact plan's scaling only raises β). It is sized for the median
// whatever quantile is asked, so that fits which differ only in their
// quantile are planned alike (a private selection among them needs that);
// a quantile far from the median needs a larger clip_share. Everything
// it reads is public, so the share is too (plugins/pca/DERIVATIONS.md §6).
func DefaultShare(n, k int, g privacy.Grant, pure bool, lo, hi float64) float64 {
	if k < 1 {
		return lo
	}
	beta := quantile.LocatingBeta(0.5, n, len(kernel.DefaultGrid()))
	var need float64
	if pure {
		eps := g.Epsilon
		if g.Kind == privacy.GrantZCDP {
			eps = math.Sqrt(2 * g.Rho)
		}
		need = 2 * beta * float64(k) / eps
	} else {
		rho := g.Rho
		if g.Kind != privacy.GrantZCDP {
			r, err := privacy.RhoForEpsDelta(g.Epsilon, g.Delta)
			if err != nil {
				return lo // the grant is refused elsewhere
			}
			rho = r
		}
		need = beta * beta * float64(k) / (2 * rho)
	}
	if math.IsNaN(need) {
		return lo
	}
	return min(hi, max(lo, need))
}

// Parse reads clip=auto or a positive finite number.
func (o *Options) Parse() error {
	v := strings.TrimSpace(o.Clip)
	if v == AutoValue {
		o.value = 0
		return nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
		return fmt.Errorf("clip=%q: give auto or a positive finite number", o.Clip)
	}
	o.value = f
	return nil
}

// Auto reports clip=auto (after Parse).
func (o *Options) Auto() bool { return o.value == 0 }

// Value is the public clip (0 with clip=auto; after Parse).
func (o *Options) Value() float64 { return o.value }

// PrivateNorm releases the q-quantile of the norms ‖x_i − μ‖ of the rows
// (μ public: nil or an earlier private release) from their counts on the
// public grid kernel.DefaultGrid (kernel.NormCounts, a rows.norm_histogram
// pass) with the exponential mechanism (quantile.ReleaseCounts), declared
// with acct as the exponential step name at budget b. Replacing a row
// moves each count by at most one, so the utility's sensitivity is 1
// (plugins/pca/DERIVATIONS.md §6). The counts are a pass's (rows or
// users): it declares the step only when they are well formed
// (non-negative integers, len(grid)+1 of them).
func PrivateNorm(acct *privacy.Accountant, rnd *privacy.Source, name string, b privacy.Budget, cells []float64, q float64) (float64, error) {
	grid := kernel.DefaultGrid()
	if len(cells) != len(grid)+1 {
		return 0, fmt.Errorf("%s: %d cell counts for a grid of %d points", name, len(cells), len(grid))
	}
	counts := make([]int64, len(cells))
	for k, c := range cells {
		if c < 0 || c != math.Trunc(c) || c > math.MaxInt64/2 {
			return 0, fmt.Errorf("%s: cell count %d = %v is not a non-negative integer", name, k, c)
		}
		counts[k] = int64(c)
	}
	rel, err := acct.Exponential(name, 1, b)
	if err != nil {
		return 0, err
	}
	var c float64
	err = rel.Sample(func(beta float64) error {
		c, err = quantile.ReleaseCounts(counts, q, grid, beta, rnd)
		return err
	})
	if err != nil {
		return 0, err
	}
	return c, nil
}
