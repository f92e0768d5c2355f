package gen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/sdk"
)

// Reference draws the public reference data set a plan's dry run fits
// (sdk.Plan): a synthetic data set of the request's public shape, from a
// fixed model that looks at nothing but that shape and the rank, with its
// truth (sdk.ReferenceData). Every value is multiplied by scale (a second scale shows
// which step sensitivities depend on the data). The models:
//
//   - rows: the spiked model with r equal spikes that hold half the
//     variance (λ = 1/(2r), σ² = 1/(2p), so a centred row's typical norm
//     is 1), shifted by a mean of norm 1 in a random direction, and
//     rescaled by 1/√2 so that the typical row norm is 1. Raw features
//     (intensities, counts, measurements) are rarely centred: with the
//     mean as far from 0 as the rows' spread, an estimator that does not
//     centre pays for it as it would on such data. U is the centred
//     covariance's top-r subspace;
//   - trace: the trace-regression model with σ1 = 2, σr = 1, σ_ξ = 0.5 and
//     the shape's d1, d2;
//   - users: the shared-representation model with the shape's users, their
//     mean number of rows and the dimension p.
//
// It is a model, not the user's data: a real data set may be easier or
// harder than its reference.
func Reference(s sdk.Shape, rank int, scale float64, seed uint64) (sdk.ReferenceData, error) {
	itoa := strconv.Itoa
	var (
		name string
		raw  map[string]string
	)
	switch s.Kind {
	case data.Rows:
		r := min(max(rank, 1), s.P-1)
		name, raw = SpikedName, map[string]string{"n": itoa(s.N), "p": itoa(s.P), "rank": itoa(r),
			"lambda": fmt.Sprint(1 / (2 * float64(r))), "sigma2": fmt.Sprint(1 / (2 * float64(s.P)))}
	case data.Trace:
		name, raw = TraceModelName, map[string]string{"n": itoa(s.N), "d1": itoa(s.D1), "d2": itoa(s.D2),
			"rank": itoa(min(max(rank, 1), s.D1, s.D2))}
	case data.Users:
		users := max(s.Users, 1)
		name, raw = UsersLowRankName, map[string]string{"users": itoa(users), "samples": itoa(max(int(math.Round(float64(s.N)/float64(users))), 1)),
			"dim": itoa(s.P), "rank": itoa(min(max(rank, 1), s.P))}
	default:
		return sdk.ReferenceData{}, fmt.Errorf("no reference model for %s data", s.Kind)
	}
	g, err := Run(models[name], raw, seed)
	if err != nil {
		return sdk.ReferenceData{}, fmt.Errorf("reference model: %w", err)
	}
	d := g.Data
	d.Name = "public reference model"
	if s.Kind == data.Rows {
		mean := RandomOrthonormal(s.P, 1, rand.New(rand.NewPCG(seed, 0x6d65616e))).RawMatrix().Data
		for i := 0; i < s.N; i++ {
			row := d.X.RawRowView(i)
			for j := range row {
				row[j] += mean[j]
			}
		}
		scale /= math.Sqrt2
	}
	d.X.Scale(scale, d.X)
	for i := range d.Y {
		d.Y[i] *= scale
	}
	out := sdk.ReferenceData{Data: d, U: g.Truth["U"]}
	if s.Kind == data.Rows {
		out.Sigma = g.Truth["Sigma"]
	}
	return out, nil
}
