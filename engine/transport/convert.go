package transport

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/engine/transport/internal/dplrpb"
)

// infoToProto converts a catalogue entry to its wire form.
func infoToProto(in sdk.Info) *dplrpb.EstimatorInfo {
	out := &dplrpb.EstimatorInfo{
		Name: in.Name, Version: in.Version, Summary: in.Summary, Description: in.Description,
		DataKind: string(in.DataKind), Guarantee: in.Guarantee, References: in.References, NonPrivate: in.NonPrivate,
		Remote: in.Remote,
	}
	for _, g := range in.Grants {
		out.Grants = append(out.Grants, string(g))
	}
	for _, p := range in.Params {
		out.Params = append(out.Params, &dplrpb.ParamSpec{
			Name: p.Name, Type: string(p.Type), DefaultValue: p.Default, Min: p.Min, Max: p.Max,
			Choices: p.Choices, Required: p.Required, Doc: p.Doc,
		})
	}
	return out
}

// infoFromProto converts a wire catalogue entry back (host side).
func infoFromProto(in *dplrpb.EstimatorInfo) sdk.Info {
	out := sdk.Info{
		Name: in.GetName(), Version: in.GetVersion(), Summary: in.GetSummary(), Description: in.GetDescription(),
		DataKind: data.Kind(in.GetDataKind()), Guarantee: in.GetGuarantee(), References: in.GetReferences(),
		NonPrivate: in.GetNonPrivate(), Remote: in.GetRemote(),
	}
	for _, g := range in.GetGrants() {
		out.Grants = append(out.Grants, privacy.GrantKind(g))
	}
	for _, p := range in.GetParams() {
		out.Params = append(out.Params, sdk.ParamSpec{
			Name: p.GetName(), Type: sdk.ParamType(p.GetType()), Default: p.GetDefaultValue(), Min: p.Min, Max: p.Max,
			Choices: p.GetChoices(), Required: p.GetRequired(), Doc: p.GetDoc(),
		})
	}
	return out
}

// grantToProto converts a grant to its wire form.
func grantToProto(g privacy.Grant) *dplrpb.Grant {
	return &dplrpb.Grant{Kind: string(g.Kind), Epsilon: g.Epsilon, Delta: g.Delta, Rho: g.Rho}
}

// grantFromProto converts a wire grant.
func grantFromProto(g *dplrpb.Grant) privacy.Grant {
	return privacy.Grant{Kind: privacy.GrantKind(g.GetKind()), Epsilon: g.GetEpsilon(), Delta: g.GetDelta(), Rho: g.GetRho()}
}

// stepToProto converts a privacy step to its wire form.
func stepToProto(s privacy.Step) *dplrpb.Step {
	return &dplrpb.Step{Name: s.Name, Mechanism: string(s.Mechanism), Calibration: s.Calibration,
		Sensitivity: s.Sensitivity, Scale: s.Scale, Epsilon: s.Epsilon, Delta: s.Delta, Rho: s.Rho, Note: s.Note,
		QuerySensitivity: s.QuerySensitivity, Dim: int64(s.Dim), Grid: s.Grid}
}

// stepFromProto converts a wire step.
func stepFromProto(s *dplrpb.Step) privacy.Step {
	return privacy.Step{Name: s.GetName(), Mechanism: privacy.Mechanism(s.GetMechanism()), Calibration: s.GetCalibration(),
		Sensitivity: s.GetSensitivity(), Scale: s.GetScale(), Epsilon: s.GetEpsilon(), Delta: s.GetDelta(), Rho: s.GetRho(), Note: s.GetNote(),
		QuerySensitivity: s.GetQuerySensitivity(), Dim: int(s.GetDim()), Grid: s.GetGrid()}
}

// guaranteeToProto converts a guarantee to its wire form (with its text).
func guaranteeToProto(g privacy.Guarantee) *dplrpb.Guarantee {
	return &dplrpb.Guarantee{Kind: string(g.Kind), Epsilon: g.Epsilon, Delta: g.Delta, Rho: g.Rho, Model: g.Model,
		Beta: g.Beta, Assumptions: g.Assumptions, Neighbours: g.Neighbours, Seeded: g.Seeded, Text: g.String(),
		Accounting: g.Accounting, Mu: g.Mu}
}

// guaranteeFromProto converts a wire guarantee.
func guaranteeFromProto(g *dplrpb.Guarantee) privacy.Guarantee {
	return privacy.Guarantee{Kind: privacy.GuaranteeKind(g.GetKind()), Epsilon: g.GetEpsilon(), Delta: g.GetDelta(),
		Rho: g.GetRho(), Model: g.GetModel(), Beta: g.GetBeta(), Assumptions: g.GetAssumptions(),
		Neighbours: g.GetNeighbours(), Seeded: g.GetSeeded(), Accounting: g.GetAccounting(), Mu: g.GetMu()}
}

// handleToProto converts a prepared data set handle to its wire form.
func handleToProto(h dataio.Handle) *dplrpb.DatasetHandle {
	return &dplrpb.DatasetHandle{
		Version: int32(h.Version), Kind: string(h.Kind), Hash: h.Hash, Name: h.Name,
		N: int64(h.N), P: int64(h.P), D1: int64(h.D1), D2: int64(h.D2),
		X: refToProto(&h.X), Y: refToProto(h.Y), UserStart: refToProto(h.UserStart),
		UserIds: refToProto(h.UserIDs), Labels: refToProto(h.Labels), ColumnScaled: h.ColumnScaled,
	}
}

// handleFromProto converts a wire handle.
func handleFromProto(h *dplrpb.DatasetHandle) dataio.Handle {
	out := dataio.Handle{
		Version: int(h.GetVersion()), Kind: data.Kind(h.GetKind()), Hash: h.GetHash(), Name: h.GetName(),
		N: int(h.GetN()), P: int(h.GetP()), D1: int(h.GetD1()), D2: int(h.GetD2()),
		Y: refFromProto(h.GetY()), UserStart: refFromProto(h.GetUserStart()),
		UserIDs: refFromProto(h.GetUserIds()), Labels: refFromProto(h.GetLabels()), ColumnScaled: h.GetColumnScaled(),
	}
	if x := refFromProto(h.GetX()); x != nil {
		out.X = *x
	}
	return out
}

func refToProto(r *dataio.FileRef) *dplrpb.FileRef {
	if r == nil {
		return nil
	}
	return &dplrpb.FileRef{Path: r.Path, Offset: r.Offset, Dtype: r.DType, Count: r.Count, Size: r.Size, Mtime: r.ModTime, Scale: r.Scale}
}

func refFromProto(r *dplrpb.FileRef) *dataio.FileRef {
	if r == nil {
		return nil
	}
	return &dataio.FileRef{Path: r.GetPath(), Offset: r.GetOffset(), DType: r.GetDtype(), Count: r.GetCount(), Size: r.GetSize(), ModTime: r.GetMtime(), Scale: r.GetScale()}
}

// shapeOf is the public shape of a prepared data set: its kind and
// dimensions, never its content.
func shapeOf(h dataio.Handle) *dplrpb.Shape {
	s := &dplrpb.Shape{Kind: string(h.Kind), N: int64(h.N), P: int64(h.P), D1: int64(h.D1), D2: int64(h.D2), ColumnScaled: h.ColumnScaled}
	if h.UserStart != nil && h.UserStart.Count > 0 {
		s.Users = h.UserStart.Count - 1
	}
	return s
}

// shapeFromProto converts a wire shape to the SDK's.
func shapeFromProto(s *dplrpb.Shape) sdk.Shape {
	return sdk.Shape{Kind: data.Kind(s.GetKind()), N: int(s.GetN()), P: int(s.GetP()), D1: int(s.GetD1()), D2: int(s.GetD2()), Users: int(s.GetUsers()),
		Remote: s.GetRemote(), ColumnScaled: s.GetColumnScaled()}
}

// remoteHandleToProto is the wire handle of a data set held elsewhere:
// h's kind, hash (the source identity), name and shape, with r's shape as
// its remote part and no file.
func remoteHandleToProto(h dataio.Handle, r *data.Remote) *dplrpb.DatasetHandle {
	return &dplrpb.DatasetHandle{
		Version: int32(h.Version), Kind: string(h.Kind), Hash: h.Hash, Name: h.Name,
		N: int64(r.N), P: int64(r.P), D1: int64(r.D1), D2: int64(r.D2), Remote: remoteToProto(r),
	}
}

// remoteShapeOf is the public shape of a data set held elsewhere.
func remoteShapeOf(kind data.Kind, r *data.Remote) *dplrpb.Shape {
	return &dplrpb.Shape{Kind: string(kind), N: int64(r.N), P: int64(r.P), D1: int64(r.D1), D2: int64(r.D2), Users: int64(r.Users), Remote: true}
}

// scalarsFromProto converts a result's scalar outputs.
func scalarsFromProto(in []*dplrpb.Scalar) []sdk.Scalar {
	out := make([]sdk.Scalar, 0, len(in))
	for _, s := range in {
		out = append(out, sdk.Scalar{Name: s.GetName(), Value: s.GetValue(), Release: sdk.Release(s.GetRelease()), Doc: s.GetDoc()})
	}
	return out
}

// seriesFromProto converts a result's series outputs.
func seriesFromProto(in []*dplrpb.Series) []sdk.Series {
	out := make([]sdk.Series, 0, len(in))
	for _, s := range in {
		out = append(out, sdk.Series{Name: s.GetName(), Values: s.GetValues(), Release: sdk.Release(s.GetRelease()), Doc: s.GetDoc()})
	}
	return out
}

// stepsFromProto converts a list of wire steps.
func stepsFromProto(in []*dplrpb.Step) []privacy.Step {
	out := make([]privacy.Step, 0, len(in))
	for _, s := range in {
		out = append(out, stepFromProto(s))
	}
	return out
}

// declarationToProto writes a pre-flight declaration of mechanisms into a
// Check response.
func declarationToProto(d sdk.Declaration, resp *dplrpb.CheckResponse) {
	resp.MechanismsDeclared = d.Declared
	resp.Mechanisms = nil
	for _, u := range d.Uses {
		resp.Mechanisms = append(resp.Mechanisms, &dplrpb.CheckResponse_MechanismUse{Mechanism: string(u.Mechanism), Purpose: u.For})
	}
}

// Limits on a declaration received from a plugin: its purposes are shown
// to the user in refusals, so a plugin cannot flood or garble a terminal
// through them.
const (
	MaxDeclaredUses   = 256 // mechanism uses in one Check response
	MaxPurposeRunes   = 160 // runes kept of each purpose
	purposeEllipsis   = "…"
	purposeReplaceCtl = ' '
)

// declarationFromProto reads the declaration of a Check response,
// normalised by sdk.NewDeclaration (an unknown mechanism name is an
// error). A response without one is undeclared. Purposes are cleaned for
// display: control characters become spaces and each is cut to
// MaxPurposeRunes; more than MaxDeclaredUses uses is an error.
func declarationFromProto(resp *dplrpb.CheckResponse) (sdk.Declaration, error) {
	if !resp.GetMechanismsDeclared() {
		if len(resp.GetMechanisms()) > 0 {
			return sdk.Declaration{}, fmt.Errorf("lists %d mechanisms without declaring them (mechanisms_declared is false)", len(resp.GetMechanisms()))
		}
		return sdk.Declaration{}, nil
	}
	if n := len(resp.GetMechanisms()); n > MaxDeclaredUses {
		return sdk.Declaration{}, fmt.Errorf("declares %d mechanism uses, more than the %d a host accepts", n, MaxDeclaredUses)
	}
	uses := make([]sdk.MechanismUse, 0, len(resp.GetMechanisms()))
	for _, m := range resp.GetMechanisms() {
		uses = append(uses, sdk.MechanismUse{Mechanism: privacy.Mechanism(m.GetMechanism()), For: cleanPurpose(m.GetPurpose())})
	}
	return sdk.NewDeclaration(uses)
}

// cleanPurpose makes a plugin's purpose text safe to print.
func cleanPurpose(s string) string {
	out := make([]rune, 0, min(len(s), MaxPurposeRunes+1))
	for _, r := range s {
		if len(out) == MaxPurposeRunes {
			return string(out) + purposeEllipsis
		}
		if unicode.IsControl(r) || r == utf8.RuneError {
			r = purposeReplaceCtl
		}
		out = append(out, r)
	}
	return string(out)
}

// planToProto converts a plan to its wire form.
func planToProto(p sdk.Plan) *dplrpb.Plan {
	out := &dplrpb.Plan{Accounting: p.Accounting, Scored: p.Scored, ExpectedScore: p.ExpectedScore,
		RandomScore: p.RandomScore, NearRandom: p.NearRandom, Note: p.Note}
	for _, st := range p.Steps {
		out.Steps = append(out.Steps, &dplrpb.Plan_PlanStep{Step: stepToProto(st.Step), Multiplier: st.Multiplier})
	}
	return out
}

// planFromProto converts a wire plan (nil: none was sent).
func planFromProto(p *dplrpb.Plan) *sdk.Plan {
	if p == nil {
		return nil
	}
	out := &sdk.Plan{Accounting: p.GetAccounting(), Scored: p.GetScored(), ExpectedScore: p.GetExpectedScore(),
		RandomScore: p.GetRandomScore(), NearRandom: p.GetNearRandom(), Note: p.GetNote()}
	for _, st := range p.GetSteps() {
		out.Steps = append(out.Steps, sdk.PlanStep{Step: stepFromProto(st.GetStep()), Multiplier: st.GetMultiplier()})
	}
	return out
}
