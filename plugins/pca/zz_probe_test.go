package pca

import (
	"context"
	"testing"
	"time"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

func TestZZProbe(t *testing.T) {
	ctx := context.Background()
	approx := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	s := sdk.Shape{Kind: data.Rows, N: 500, P: 784}
	t0 := time.Now()
	rd, err := gen.Reference(s, 10, 1, 1)
	t.Logf("ref %v %v", time.Since(t0), err)
	t0 = time.Now()
	seed := uint64(3)
	_, _, err = sdk.RunLocal(ctx, AnalyzeGauss{}, rd.Data, map[string]string{"rank": "10", "center": "private"}, approx, sdk.LocalOptions{Seed: &seed})
	t.Logf("fit %v %v", time.Since(t0), err)
}
