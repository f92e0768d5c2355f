package transport

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/engine/transport/internal/dplrpb"
)

// A declaration survives the wire; a malformed or abusive one is refused
// or cleaned before anyone prints it.
func TestDeclarationOverTheWire(t *testing.T) {
	d, err := sdk.NewDeclaration([]sdk.MechanismUse{{Mechanism: privacy.MechGaussian, For: "moment"}, {Mechanism: privacy.MechExponential, For: "clip"}})
	require.NoError(t, err)
	resp := &dplrpb.CheckResponse{}
	declarationToProto(d, resp)
	back, err := declarationFromProto(resp)
	require.NoError(t, err)
	assert.Equal(t, d, back)

	undeclared, err := declarationFromProto(&dplrpb.CheckResponse{FootprintBytes: 1})
	require.NoError(t, err)
	assert.False(t, undeclared.Declared)

	use := func(m, p string) *dplrpb.CheckResponse_MechanismUse {
		return &dplrpb.CheckResponse_MechanismUse{Mechanism: m, Purpose: p}
	}
	_, err = declarationFromProto(&dplrpb.CheckResponse{MechanismsDeclared: true, Mechanisms: []*dplrpb.CheckResponse_MechanismUse{use("quantum", "")}})
	assert.ErrorContains(t, err, "unknown privacy mechanism")
	_, err = declarationFromProto(&dplrpb.CheckResponse{Mechanisms: []*dplrpb.CheckResponse_MechanismUse{use("gaussian", "")}})
	assert.ErrorContains(t, err, "without declaring them")
	many := make([]*dplrpb.CheckResponse_MechanismUse, MaxDeclaredUses+1)
	for i := range many {
		many[i] = use("gaussian", "x")
	}
	_, err = declarationFromProto(&dplrpb.CheckResponse{MechanismsDeclared: true, Mechanisms: many})
	assert.ErrorContains(t, err, "more than")

	got, err := declarationFromProto(&dplrpb.CheckResponse{MechanismsDeclared: true, Mechanisms: []*dplrpb.CheckResponse_MechanismUse{
		use("laplace", "mean\x1b[2J\nrm -rf"+strings.Repeat("y", 500))}})
	require.NoError(t, err)
	p := got.Uses[0].For
	assert.NotContains(t, p, "\x1b")
	assert.NotContains(t, p, "\n")
	assert.Equal(t, MaxPurposeRunes+1, len([]rune(p)), "cut, with an ellipsis")
}
