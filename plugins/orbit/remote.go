package orbit

import (
	"errors"

	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/project"
	"github.com/dplr/dplr/plugins/internal/rowsrc"
)

// Remote paths (sdk.RemoteEstimator): every private orbit estimator starts
// from A = Σ x̃x̃ᵀ/clip², one clipped second-moment pass over a rows data
// set held elsewhere (shards a Beam pipeline reads, dplr fit --engine
// beam); under clip=auto the private norm quantile reads the counts of the
// row norms on its public grid, one more pass (plugins/pca/DERIVATIONS.md
// §6, §11). problemFor reads the rows through a rowsrc.Source, so the fit
// is the same code as on local rows: the same plan and steps, and with the
// same seed the same release up to the summation order of A.
// evaluate=true reads the unclipped mean and second moment of the rows
// (one more pass, of kind rows.moment with clip 0; evaluation only).

// remotePasses returns the pass kinds of a fit with these options on a
// remote data set.
func remotePasses(o *base) ([]string, error) {
	kinds := rowsrc.Kinds(o.Options.Auto(), false)
	if o.Evaluate.Value {
		kinds = append(kinds, pass.RowsMoment)
	}
	return kinds, nil
}

// remote is what the private orbit estimators share: the transform of
// their projection and the sdk.RemoteEstimator method.
type remote struct{ project.Projection }

// Passes implements sdk.RemoteEstimator.
func (remote) Passes(opts any, _ sdk.Shape) ([]string, error) {
	return remotePasses(opts.(interface{ orbitBase() *base }).orbitBase())
}

// orbitBase returns the parameters every orbit estimator takes.
func (b *base) orbitBase() *base { return b }

// errRemoteExactQuantile refuses orbit-nonprivate's clip=auto on a remote
// data set.
var errRemoteExactQuantile = errors.New("clip=auto of the non-private reference takes the exact quantile of the row norms, which aggregation passes do not give: give a clip (clip=NUMBER)")

// Passes implements sdk.RemoteEstimator: the non-private reference reads
// A (one clipped second-moment pass); its clip=auto (the exact quantile of
// the norms) is refused.
func (NonPrivate) Passes(opts any, _ sdk.Shape) ([]string, error) {
	o := opts.(*nonPrivateOptions)
	if o.Options.Auto() {
		return nil, errRemoteExactQuantile
	}
	kinds := rowsrc.Kinds(false, false)
	if o.Evaluate.Value {
		kinds = append(kinds, pass.RowsMoment)
	}
	return kinds, nil
}
