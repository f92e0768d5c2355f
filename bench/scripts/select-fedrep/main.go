// Command select-fedrep measures FedRep's private rank selection on the
// Fashion-MNIST users task through the host (bench/results/select.md): for
// each seed, one fedrep-private fit with select=rank=2,3,5,9 at (ε, δ) =
// (1, 1e-6), and every candidate rank fitted alone with the same grant;
// each scored, non-privately, by the users' held-out accuracy.
//
//	go run ./bench/scripts/select-fedrep PLUGIN_DIR SEEDS
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	fedrep "github.com/dplr/dplr/bench/studies/fedrep"
	"github.com/dplr/dplr/client"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: select-fedrep PLUGIN_DIR SEEDS")
		os.Exit(2)
	}
	seeds, err := strconv.Atoi(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	home, err := os.MkdirTemp("", "select-fedrep")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(home)
	c, err := client.New(client.Options{Home: home, PluginDirs: []string{os.Args[1]}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer c.Close()
	if err := run(context.Background(), c, seeds); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c *client.Client, seeds int) error {
	task := fedrep.DefaultPersonalTask()
	ranks := []string{"2", "3", "5", "9"}
	for s := 1; s <= seeds; s++ {
		ds, err := task.Build(uint64(s))
		if err != nil {
			return err
		}
		fit := func(p client.Params) (float64, *client.Result, error) {
			p = p.Float("holdout", (float64(task.Holdout)+0.5)/float64(task.Train+task.Holdout)).String("head_data", "all")
			res, err := c.Fit(ctx, client.FitRequest{Estimator: "fedrep-private", Params: p, Grant: client.ApproxDP(1, 1e-6), Data: client.InMemory(ds)})
			if err != nil {
				return 0, nil, err
			}
			u, _ := res.Matrix("U")
			v, _ := res.Matrix("V")
			ids, _ := res.Matrix("V_user_ids")
			acc, err := task.Accuracy(ds, u, v, ids)
			return acc, res, err
		}
		row := map[string]any{"seed": s}
		acc, res, err := fit(client.Params{}.String("select", "rank="+strings.Join(ranks, ",")).String("select_score", "accuracy"))
		if err != nil {
			return fmt.Errorf("seed %d, selection: %w", s, err)
		}
		row["selected_rank"], _ = res.Scalar("selected_rank")
		row["selected"] = acc
		for _, r := range ranks {
			if row["rank "+r], _, err = fit(client.Params{}.String("rank", r)); err != nil {
				return fmt.Errorf("seed %d, rank %s: %w", s, r, err)
			}
		}
		b, _ := json.Marshal(row)
		fmt.Println(string(b))
	}
	return nil
}
