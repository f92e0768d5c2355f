package sdk

import (
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/proto/dplrpb"
)

// InfoToProto converts a catalogue entry to its wire form.
func InfoToProto(in Info) *dplrpb.EstimatorInfo {
	out := &dplrpb.EstimatorInfo{
		Name: in.Name, Version: in.Version, Summary: in.Summary, Description: in.Description,
		DataKind: string(in.DataKind), Guarantee: in.Guarantee, References: in.References, NonPrivate: in.NonPrivate,
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

// InfoFromProto converts a wire catalogue entry back (host side).
func InfoFromProto(in *dplrpb.EstimatorInfo) Info {
	out := Info{
		Name: in.GetName(), Version: in.GetVersion(), Summary: in.GetSummary(), Description: in.GetDescription(),
		DataKind: data.Kind(in.GetDataKind()), Guarantee: in.GetGuarantee(), References: in.GetReferences(),
		NonPrivate: in.GetNonPrivate(),
	}
	for _, g := range in.GetGrants() {
		out.Grants = append(out.Grants, privacy.GrantKind(g))
	}
	for _, p := range in.GetParams() {
		out.Params = append(out.Params, ParamSpec{
			Name: p.GetName(), Type: ParamType(p.GetType()), Default: p.GetDefaultValue(), Min: p.Min, Max: p.Max,
			Choices: p.GetChoices(), Required: p.GetRequired(), Doc: p.GetDoc(),
		})
	}
	return out
}

// GrantToProto converts a grant to its wire form.
func GrantToProto(g privacy.Grant) *dplrpb.Grant {
	return &dplrpb.Grant{Kind: string(g.Kind), Epsilon: g.Epsilon, Delta: g.Delta, Rho: g.Rho}
}

// GrantFromProto converts a wire grant.
func GrantFromProto(g *dplrpb.Grant) privacy.Grant {
	return privacy.Grant{Kind: privacy.GrantKind(g.GetKind()), Epsilon: g.GetEpsilon(), Delta: g.GetDelta(), Rho: g.GetRho()}
}

// StepToProto converts a privacy step to its wire form.
func StepToProto(s privacy.Step) *dplrpb.Step {
	return &dplrpb.Step{Name: s.Name, Mechanism: string(s.Mechanism), Calibration: s.Calibration,
		Sensitivity: s.Sensitivity, Scale: s.Scale, Epsilon: s.Epsilon, Delta: s.Delta, Rho: s.Rho, Note: s.Note,
		QuerySensitivity: s.QuerySensitivity, Dim: int64(s.Dim), Grid: s.Grid}
}

// StepFromProto converts a wire step.
func StepFromProto(s *dplrpb.Step) privacy.Step {
	return privacy.Step{Name: s.GetName(), Mechanism: privacy.Mechanism(s.GetMechanism()), Calibration: s.GetCalibration(),
		Sensitivity: s.GetSensitivity(), Scale: s.GetScale(), Epsilon: s.GetEpsilon(), Delta: s.GetDelta(), Rho: s.GetRho(), Note: s.GetNote(),
		QuerySensitivity: s.GetQuerySensitivity(), Dim: int(s.GetDim()), Grid: s.GetGrid()}
}

// GuaranteeToProto converts a guarantee to its wire form (with its text).
func GuaranteeToProto(g privacy.Guarantee) *dplrpb.Guarantee {
	return &dplrpb.Guarantee{Kind: string(g.Kind), Epsilon: g.Epsilon, Delta: g.Delta, Rho: g.Rho, Model: g.Model,
		Beta: g.Beta, Assumptions: g.Assumptions, Neighbours: g.Neighbours, Seeded: g.Seeded, Text: g.String()}
}

// GuaranteeFromProto converts a wire guarantee.
func GuaranteeFromProto(g *dplrpb.Guarantee) privacy.Guarantee {
	return privacy.Guarantee{Kind: privacy.GuaranteeKind(g.GetKind()), Epsilon: g.GetEpsilon(), Delta: g.GetDelta(),
		Rho: g.GetRho(), Model: g.GetModel(), Beta: g.GetBeta(), Assumptions: g.GetAssumptions(),
		Neighbours: g.GetNeighbours(), Seeded: g.GetSeeded()}
}
