package orbit

import (
	"context"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/project"
)

// Transform implements sdk.Transformer: rows projected onto the released
// components (project.Transform).
func (EM) Transform(_ context.Context, m *sdk.Model, opts map[string]string, x *mat.Dense) (sdk.Matrix, error) {
	return project.Transform(m, opts, x)
}

// Transform implements sdk.Transformer: rows projected onto the released
// components (project.Transform).
func (RankK) Transform(_ context.Context, m *sdk.Model, opts map[string]string, x *mat.Dense) (sdk.Matrix, error) {
	return project.Transform(m, opts, x)
}

// Transform implements sdk.Transformer: rows projected onto the released
// components (project.Transform).
func (Deflation) Transform(_ context.Context, m *sdk.Model, opts map[string]string, x *mat.Dense) (sdk.Matrix, error) {
	return project.Transform(m, opts, x)
}

// Transform implements sdk.Transformer: rows projected onto the released
// components (project.Transform).
func (Gauss) Transform(_ context.Context, m *sdk.Model, opts map[string]string, x *mat.Dense) (sdk.Matrix, error) {
	return project.Transform(m, opts, x)
}

// Transform implements sdk.Transformer: rows projected onto the released
// components (project.Transform).
func (NonPrivate) Transform(_ context.Context, m *sdk.Model, opts map[string]string, x *mat.Dense) (sdk.Matrix, error) {
	return project.Transform(m, opts, x)
}
