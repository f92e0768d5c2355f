package pca

import (
	"context"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/project"
)

// Transform implements sdk.Transformer: rows projected onto the released
// components (project.Transform).
func (CXZ) Transform(_ context.Context, m *sdk.Model, opts map[string]string, x *mat.Dense) (sdk.Matrix, error) {
	return project.Transform(m, opts, x)
}

// Transform implements sdk.Transformer: rows projected onto the released
// components (project.Transform).
func (AnalyzeGauss) Transform(_ context.Context, m *sdk.Model, opts map[string]string, x *mat.Dense) (sdk.Matrix, error) {
	return project.Transform(m, opts, x)
}

// Transform implements sdk.Transformer: rows projected onto the released
// components (project.Transform).
func (Amin) Transform(_ context.Context, m *sdk.Model, opts map[string]string, x *mat.Dense) (sdk.Matrix, error) {
	return project.Transform(m, opts, x)
}

// Transform implements sdk.Transformer: rows projected onto the released
// components (project.Transform).
func (NonPrivate) Transform(_ context.Context, m *sdk.Model, opts map[string]string, x *mat.Dense) (sdk.Matrix, error) {
	return project.Transform(m, opts, x)
}
