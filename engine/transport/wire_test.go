package transport

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

type wireOptions struct {
	sdk.Rank
	sdk.Clip `default:"1"`
	sdk.Noise
	_ sdk.Renamed `param:"calibration" renamed:"noise"`
}

type wireEst struct{}

func (wireEst) Info() sdk.Info {
	return sdk.Info{Name: "wire", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantApprox}, Options: wireOptions{}}
}

func (wireEst) Fit(context.Context, *sdk.Run) (*sdk.Result, error) { return &sdk.Result{}, nil }

// The catalogue a plugin server sends keeps exclusive bounds in force for a
// host that reads only inclusive ones, lists a former name (as a string
// parameter whose doc names the replacement: the plugin refuses it), and
// carries the SDK's allow_large_delta.
func TestCatalogueOnTheWire(t *testing.T) {
	srv, err := NewServer("p", "0", wireEst{})
	require.NoError(t, err)
	cat, err := srv.Catalogue(context.Background(), nil)
	require.NoError(t, err)
	host := infoFromProto(cat.GetEstimators()[0])
	require.NoError(t, sdk.CheckSpecs(host.Params))
	_, err = sdk.ValidateParams(host.Params, map[string]string{"rank": "2", "clip": "0"})
	assert.ErrorContains(t, err, "below its minimum")
	_, err = sdk.ValidateParams(host.Params, map[string]string{"rank": "2", "clip": "1e-300"})
	assert.NoError(t, err)
	names := map[string]string{}
	for _, p := range host.Params {
		names[p.Name] = p.Doc
	}
	assert.Contains(t, names, sdk.ParamAllowLargeDelta)
	assert.Equal(t, "former name of noise=, refused: give noise= instead", names["calibration"])
	assert.Contains(t, names["clip"], "(must be > 0)")
}
