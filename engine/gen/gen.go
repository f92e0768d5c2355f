// Package gen generates synthetic data sets with known ground truth for each
// of dplr's estimator families. Models register themselves by name; `dplr
// gen MODEL` looks them up here.
package gen

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/sdk"
)

// Generated is a synthetic data set and the truth it was drawn from.
type Generated struct {
	Data *data.Dataset
	// Truth holds the ground-truth matrices (e.g. "U", "M", "Sigma").
	Truth map[string]*mat.Dense
	// Scalars holds ground-truth scalars and the model's public parameters.
	Scalars map[string]float64
}

// Model is a synthetic data model.
type Model interface {
	Name() string
	Summary() string
	Params() []sdk.ParamSpec
	Generate(p sdk.Params, rng *rand.Rand) (*Generated, error)
}

// model is a Model given by its parts.
type model struct {
	name, summary string
	params        []sdk.ParamSpec
	generate      func(sdk.Params, *rand.Rand) (*Generated, error)
}

func (m model) Name() string            { return m.name }
func (m model) Summary() string         { return m.summary }
func (m model) Params() []sdk.ParamSpec { return m.params }
func (m model) Generate(p sdk.Params, rng *rand.Rand) (*Generated, error) {
	return m.generate(p, rng)
}

var models = map[string]Model{}

// Register adds a model; it is called from init functions.
func Register(m Model) { models[m.Name()] = m }

// Lookup returns the named model.
func Lookup(name string) (Model, error) {
	m, ok := models[name]
	if !ok {
		return nil, fmt.Errorf("unknown data model %q (known: %v)", name, Names())
	}
	return m, nil
}

// Names lists the registered models.
func Names() []string {
	return slices.Sorted(maps.Keys(models))
}

// Run validates raw parameters against m and generates with a seeded RNG.
func Run(m Model, raw map[string]string, seed uint64) (*Generated, error) {
	p, err := sdk.ValidateParams(m.Params(), raw)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", m.Name(), err)
	}
	g, err := m.Generate(p, rand.New(rand.NewPCG(seed, 0x64706c72)))
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", m.Name(), err)
	}
	if err := g.Data.Validate(); err != nil {
		return nil, fmt.Errorf("model %s produced invalid data: %w", m.Name(), err)
	}
	return g, nil
}
