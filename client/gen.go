package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/gen"
)

// DataModel is a synthetic data model of Generate.
type DataModel struct {
	Name, Summary string
	Params        []ParamSpec
}

// DataModels lists the synthetic data models, by name.
func DataModels() []DataModel {
	var out []DataModel
	for _, name := range gen.Names() {
		m, _ := gen.Lookup(name)
		out = append(out, DataModel{Name: name, Summary: m.Summary(), Params: m.Params()})
	}
	return out
}

// CheckDataModel returns an ErrUsage error when no data model has the
// name.
func CheckDataModel(name string) error {
	if _, err := gen.Lookup(name); err != nil {
		return classed(ErrUsage, err)
	}
	return nil
}

// Generate draws a synthetic data set from the named model with its
// parameters and seed (always reproducible) and writes it into dir, which
// it creates: the data as .npy, the ground truth in truth/ and the
// manifest that a fit given the directory reads. A bad model or parameter
// is ErrUsage, a
// failure to write ErrRuntime.
func Generate(dir, model string, params map[string]string, seed uint64) (*DatasetManifest, error) {
	m, err := gen.Lookup(model)
	if err != nil {
		return nil, classed(ErrUsage, err)
	}
	g, err := gen.Run(m, params, seed)
	if err != nil {
		return nil, classed(ErrUsage, err)
	}
	man, err := writeGenerated(dir, m.Name(), params, seed, g)
	if err != nil {
		return nil, classed(ErrRuntime, err)
	}
	return man, nil
}

// writeGenerated saves a generated data set and its truth into dir.
func writeGenerated(dir, model string, raw map[string]string, seed uint64, g *gen.Generated) (*DatasetManifest, error) {
	if err := os.MkdirAll(filepath.Join(dir, "truth"), 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	d := g.Data
	n, p := d.X.Dims()
	man := &DatasetManifest{Model: model, Kind: d.Kind, Seed: seed, Params: raw, N: n, P: p, D1: d.D1, D2: d.D2,
		Users: d.NumUsers(), Hash: dataio.IdentityOf(d).Hash, Files: map[string]string{}, Truth: map[string]string{}, Scalars: g.Scalars}
	if man.Params == nil {
		man.Params = map[string]string{}
	}
	xShape := []int{n, p}
	if d.Kind == data.Trace {
		xShape = []int{n, d.D1, d.D2}
	}
	type file struct {
		key, name string
		write     func(path string) error
	}
	files := []file{{"x", "X.npy", func(path string) error {
		return dataio.SaveNPYFloat64(path, xShape, mat.DenseCopyOf(d.X).RawMatrix().Data)
	}}}
	if d.Y != nil {
		files = append(files, file{"y", "y.npy", func(path string) error { return dataio.SaveNPYFloat64(path, []int{n}, d.Y) }})
	}
	if d.Kind == data.Users {
		files = append(files, file{"users", "users.npy", func(path string) error { return dataio.SaveNPYInt64(path, dataio.RowUserIDs(d)) }})
	}
	if d.Labels != nil {
		lab := make([]int64, len(d.Labels))
		for i, l := range d.Labels {
			lab[i] = int64(l)
		}
		files = append(files, file{"labels", "labels.npy", func(path string) error { return dataio.SaveNPYInt64(path, lab) }})
	}
	for _, f := range files {
		if err := f.write(filepath.Join(dir, f.name)); err != nil {
			return nil, fmt.Errorf("writing %s: %w", filepath.Join(dir, f.name), err)
		}
		man.Files[f.key] = f.name
	}
	for _, k := range slices.Sorted(maps.Keys(g.Truth)) {
		file, err := SaveMatrix(filepath.Join(dir, "truth"), k, g.Truth[k])
		if err != nil {
			return nil, fmt.Errorf("writing truth %s: %w", k, err)
		}
		man.Truth[k] = filepath.Join("truth", file)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(man); err != nil {
		return nil, fmt.Errorf("writing manifest: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestName), b.Bytes(), 0o666); err != nil {
		return nil, fmt.Errorf("writing manifest: %w", err)
	}
	return man, nil
}

// SaveMatrix writes m as a float64 .npy file named after name (with '/',
// '\' and ' ' replaced by '_') in dir, atomically, and returns the file's
// name (also with an error, which names the file's path).
func SaveMatrix(dir, name string, m *mat.Dense) (string, error) {
	file := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ' ' {
			return '_'
		}
		return r
	}, name) + ".npy"
	return file, dataio.SaveNPY(filepath.Join(dir, file), m)
}
