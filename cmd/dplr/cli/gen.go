package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/client"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/gen"
)

// DatasetManifest is the dataset.json that `dplr gen` writes beside the
// data (client.DatasetManifest).
type DatasetManifest = client.DatasetManifest

// ManifestName is the file name of a generated data set's manifest.
const ManifestName = client.ManifestName

func cmdGen(_ context.Context, env *Env, args []string) error {
	fs := newFlags("gen", "MODEL --out DIR [--set key=value ...] [--seed N]", env)
	out := fs.String("out", "", "output `DIR` (created); holds dataset.json, the data as .npy and truth/*.npy")
	seed := fs.Uint64("seed", 1, "random seed `N` (generated data is always reproducible)")
	list := fs.Bool("list", false, "list the models and their parameters")
	var sets multiFlag
	fs.Var(&sets, "set", "model parameter `key=value` (repeatable; \"dplr gen --list\" shows each model's)")
	if err := parse(fs, reorder(fs, args)); err != nil {
		return err
	}
	if *list || fs.NArg() == 0 {
		listModels(env)
		if *list {
			return nil
		}
		return usagef("gen needs a MODEL")
	}
	if fs.NArg() != 1 {
		return usagef("gen takes one MODEL")
	}
	if *out == "" {
		return usagef("gen needs --out DIR")
	}
	model, err := gen.Lookup(fs.Arg(0))
	if err != nil {
		return fail(ExitUsage, err)
	}
	raw, err := parseSets(sets)
	if err != nil {
		return err
	}
	g, err := gen.Run(model, raw, *seed)
	if err != nil {
		return fail(ExitUsage, err)
	}
	man, err := writeGenerated(*out, model.Name(), raw, *seed, g)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "wrote %s data (%s, n=%d, p=%d) to %s; fit it with: dplr fit ESTIMATOR --data %s ...\n",
		man.Model, man.Kind, man.N, man.P, *out, *out)
	return nil
}

func listModels(env *Env) {
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	for _, name := range gen.Names() {
		m, _ := gen.Lookup(name)
		fmt.Fprintf(tw, "%s\t%s\n", name, m.Summary())
		for _, p := range m.Params() {
			fmt.Fprintf(tw, "  %s\t%s (default %s)\t%s\n", p.Name, p.Type, p.Default, p.Doc)
		}
	}
	_ = tw.Flush()
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
	save := func(key, name string, f func(path string) error) error {
		if err := f(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("writing %s: %w", filepath.Join(dir, name), err)
		}
		man.Files[key] = name
		return nil
	}
	xShape := []int{n, p}
	if d.Kind == data.Trace {
		xShape = []int{n, d.D1, d.D2}
	}
	if err := save("x", "X.npy", func(path string) error {
		return dataio.SaveNPYFloat64(path, xShape, denseData(d.X))
	}); err != nil {
		return nil, err
	}
	if d.Y != nil {
		if err := save("y", "y.npy", func(path string) error { return dataio.SaveNPYFloat64(path, []int{n}, d.Y) }); err != nil {
			return nil, err
		}
	}
	if d.Kind == data.Users {
		ids := make([]int64, n)
		for u := 0; u < d.NumUsers(); u++ {
			id := int64(u)
			if u < len(d.UserIDs) {
				id = d.UserIDs[u]
			}
			for i := d.UserStart[u]; i < d.UserStart[u+1]; i++ {
				ids[i] = id
			}
		}
		if err := save("users", "users.npy", func(path string) error { return dataio.SaveNPYInt64(path, ids) }); err != nil {
			return nil, err
		}
	}
	if d.Labels != nil {
		lab := make([]int64, len(d.Labels))
		for i, l := range d.Labels {
			lab[i] = int64(l)
		}
		if err := save("labels", "labels.npy", func(path string) error { return dataio.SaveNPYInt64(path, lab) }); err != nil {
			return nil, err
		}
	}
	names := make([]string, 0, len(g.Truth))
	for k := range g.Truth {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		file := filepath.Join("truth", safeName(k)+".npy")
		if err := dataio.SaveNPY(filepath.Join(dir, file), g.Truth[k]); err != nil {
			return nil, fmt.Errorf("writing truth %s: %w", k, err)
		}
		man.Truth[k] = file
	}
	f, err := os.Create(filepath.Join(dir, ManifestName))
	if err != nil {
		return nil, fmt.Errorf("writing manifest: %w", err)
	}
	defer f.Close()
	if err := writeJSON(f, man); err != nil {
		return nil, fmt.Errorf("writing manifest: %w", err)
	}
	return man, f.Close()
}

func denseData(m *mat.Dense) []float64 {
	r, c := m.Dims()
	raw := m.RawMatrix()
	if raw.Stride == c {
		return raw.Data[:r*c]
	}
	out := make([]float64, 0, r*c)
	for i := 0; i < r; i++ {
		out = append(out, raw.Data[i*raw.Stride:i*raw.Stride+c]...)
	}
	return out
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ' ' {
			return '_'
		}
		return r
	}, s)
}
