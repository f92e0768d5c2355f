package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/dplr/dplr/client"
)

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
	if err := client.CheckDataModel(fs.Arg(0)); err != nil {
		return err
	}
	raw, err := parseSets(sets)
	if err != nil {
		return err
	}
	man, err := client.Generate(*out, fs.Arg(0), raw, *seed)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "wrote %s data (%s, n=%d, p=%d) to %s; fit it with: dplr fit ESTIMATOR --data %s ...\n",
		man.Model, man.Kind, man.N, man.P, *out, *out)
	return nil
}

func listModels(env *Env) {
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	for _, m := range client.DataModels() {
		fmt.Fprintf(tw, "%s\t%s\n", m.Name, m.Summary)
		for _, p := range m.Params {
			fmt.Fprintf(tw, "  %s\t%s (default %s)\t%s\n", p.Name, p.Type, p.Default, p.Doc)
		}
	}
	_ = tw.Flush()
}
