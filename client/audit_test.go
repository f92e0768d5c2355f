package client

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/privacy"
)

// A claim at or above the audit's reach is reported as not tested, with
// the run count that would reach it; below the reach the verdict says how
// far the audit could see.
func TestAuditSaysWhatItCannotSee(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	o := &auditOutputs{name: "x"}
	for i := 0; i < 120; i++ {
		o.a = append(o.a, []float64{r.NormFloat64(), r.NormFloat64()})
		o.b = append(o.b, []float64{r.NormFloat64() + 0.1, r.NormFloat64()})
	}
	for _, tc := range []struct {
		eps  float64
		want string
	}{
		{10, "not tested: with 120 runs this audit can refute only ε below"},
		{1, "this audit could have seen ε up to"},
	} {
		rep, err := auditReport(AuditRequest{Runs: 120, Alpha: 0.05, Estimator: "e"}, o, privacy.Guarantee{Kind: privacy.Pure, Epsilon: tc.eps}, 1, "d")
		require.NoError(t, err)
		assert.False(t, rep.Violation)
		assert.Contains(t, rep.Verdict, tc.want)
		assert.Greater(t, rep.Bound.Reach, 1.0)
		assert.Less(t, rep.Bound.Reach, 10.0)
	}
}
