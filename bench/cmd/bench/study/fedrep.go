// "bench study fedrep" runs the paper-replication experiment of Snedeker,
// Zhou & Bassily (2025) §3.4 on the users-lowrank model — Private FedRep,
// Priv-AltMin and non-private FedRep, medians over seeds of the subspace
// distance to U* and of the closed-form population MSE — and prints a
// markdown table (and JSON with -json).

package study

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	fedrep "github.com/dplr/dplr/bench/studies/fedrep"
	"github.com/dplr/dplr/client"
)

// FedRep runs "bench study fedrep" with the arguments that follow it.
func FedRep(args []string) {
	fs := flag.NewFlagSet("bench study fedrep", flag.ExitOnError)
	cfg := fedrep.PaperStudyConfig()
	users := fs.Int("users", cfg.Users, "number of users n")
	seeds := fs.Int("seeds", cfg.Seeds, "number of seeds")
	eps := fs.String("eps", "1,2,4,8", "comma-separated ε values")
	asJSON := fs.Bool("json", false, "print JSON instead of markdown")
	plotPath := fs.String("plot", "", "also write a plot of median MSE vs ε to this file (.svg, .png, .pdf)")
	jsonPath := fs.String("jsonout", "", "also write the cells as JSON to this file")
	quiet := fs.Bool("q", false, "no progress lines on stderr")
	fmnist := fs.Bool("fmnist", false, "run the Fashion-MNIST study instead (the study package's DefaultFMNISTConfig; -seeds, -eps, -users, -per-user, -proj, -rank apply)")
	perUser := fs.Int("per-user", 0, "Fashion-MNIST: images per user (0 = default)")
	proj := fs.Int("proj", 0, "Fashion-MNIST: JL dimension (0 = default)")
	rank := fs.Int("rank", 0, "Fashion-MNIST: representation rank (0 = default)")
	personal := fs.Bool("personal", false, "run the personalization study on Fashion-MNIST users instead (the study package's DefaultPersonalStudy; -seeds, -eps, -variants, -seedlist apply)")
	variants := fs.String("variants", "", "personal study: comma-separated indices of the variants to run (default all)")
	seedList := fs.String("seedlist", "", "personal study: comma-separated seeds to run (default 1…seeds)")
	merge := fs.String("merge", "", "personal study: merge the comma-separated JSON files of runs in parts and print the tables (nothing is run)")
	selectDir := fs.String("select", "", "instead, measure fedrep-private's private rank selection on the personal task through the host, with the plugins in this `DIR`, over -seeds seeds: one JSON line per seed (bench/results/select.md)")
	_ = fs.Parse(args)
	if *selectDir != "" {
		check("fedrep", runSelect(context.Background(), *selectDir, *seeds))
		return
	}
	if *merge != "" {
		mergePersonal(*merge, *jsonPath)
		return
	}
	if *personal {
		runPersonal(*seeds, *eps, *variants, *seedList, *jsonPath, *quiet)
		return
	}
	if *fmnist {
		runFMNIST(*seeds, *eps, *users, *perUser, *proj, *rank, *quiet)
		return
	}
	cfg.Users, cfg.Seeds = *users, *seeds
	cfg.Eps = must(parseList(*eps, "ε", parseFloat, anyValue[float64]))
	cfg.Progress = progress(*quiet)
	cells, err := fedrep.RunStudy(context.Background(), cfg)
	check("fedrep", err)
	if *plotPath != "" {
		check("fedrep", plotStudy(cells, cfg, *plotPath))
	}
	writeJSON("fedrep", *jsonPath, cells)
	if *asJSON {
		writeJSON("fedrep", "-", cells)
		return
	}
	fmt.Printf("n = %d, d = %d, k = %d, m = %d, R = %g, δ = %g, %d seeds\n\n", cfg.Users, cfg.Dim, cfg.Rank, cfg.Samples, cfg.Noise, cfg.Delta, cfg.Seeds)
	fmt.Print(fedrep.StudyMarkdown(cells))
	for _, pair := range [][2]string{{"Private FedRep (exact, ψ=10)", "Priv-AltMin (disjoint groups, exact)"}, {"Private FedRep (exact, ψ=10)", "Priv-AltMin (all users, code, exact)"}, {"Private FedRep (exact, ψ=1)", "Priv-AltMin (all users, code, exact)"}, {"Private FedRep (defaults)", "Priv-AltMin (all users, code, exact)"}, {"Private FedRep (exact, ψ=10)", "Private FedRep (zCDP, ψ=10)"}} {
		ok, lines := fedrep.BeatsAtEveryEps(cells, pair[0], pair[1])
		fmt.Printf("\n%s beats %s at every ε: %v\n", pair[0], pair[1], ok)
		for _, l := range lines {
			fmt.Println("  ", l)
		}
	}
}

func runFMNIST(seeds int, eps string, users, perUser, proj, rank int, quiet bool) {
	cfg := fedrep.DefaultFMNISTConfig()
	cfg.Seeds, cfg.Eps = seeds, must(parseList(eps, "ε", parseFloat, anyValue[float64]))
	if perUser > 0 {
		cfg.PerUser = perUser
	}
	if proj > 0 {
		cfg.Proj = proj
	}
	if rank > 0 {
		cfg.Rank = rank
	}
	if users != fedrep.PaperStudyConfig().Users {
		cfg.Users = users
	}
	cfg.Progress = progress(quiet)
	rows, err := fedrep.RunFMNISTStudy(context.Background(), cfg)
	check("fedrep", err)
	fmt.Printf("Fashion-MNIST: %d users × %d images (two classes each, ±1), JL to %d, rank %d, T = %d, η = %g, ψ = %g, ψ_init = %g, hold-out %g, δ = %g, %d seeds\n\n",
		cfg.Users, cfg.PerUser, cfg.Proj, cfg.Rank, cfg.Iterations, cfg.Step, cfg.Clip, cfg.InitClip, cfg.Holdout, cfg.Delta, cfg.Seeds)
	fmt.Print(fedrep.FMNISTMarkdown(rows))
}

func runPersonal(seeds int, eps, variants, seedList, jsonPath string, quiet bool) {
	cfg := fedrep.DefaultPersonalStudy()
	cfg.Seeds, cfg.Eps = seeds, must(parseList(eps, "ε", parseFloat, anyValue[float64]))
	if variants != "" {
		var vs []fedrep.PersonalVariant
		for _, i := range must(parseList(variants, "variant", strconv.Atoi, anyValue[int])) {
			vs = append(vs, cfg.Variants[i])
		}
		cfg.Variants = vs
	}
	if seedList != "" {
		cfg.SeedList = must(parseList(seedList, "seed", strconv.Atoi, anyValue[int]))
	}
	cfg.Progress = progress(quiet)
	rows, err := fedrep.RunPersonalStudy(context.Background(), cfg)
	check("fedrep", err)
	writeJSON("fedrep", jsonPath, rows)
	fmt.Printf("Personalized Fashion-MNIST: 2×2-pooled pixels + constant (d = 197), each user its own classes ±1, δ = %g, %d seeds; accuracy = mean over users of the held-out accuracy of sign(⟨x, U v_user⟩)\n", cfg.Delta, cfg.Seeds)
	fmt.Print(fedrep.PersonalMarkdown(rows))
	fmt.Print(fedrep.PersonalTuningMarkdown(cfg, rows))
}

// mergePersonal merges the JSON rows of a personal study run in parts and
// prints the tables of the whole study (and writes the merged JSON).
func mergePersonal(files, jsonPath string) {
	var parts [][]fedrep.PersonalRow
	for _, f := range strings.Split(files, ",") {
		b, err := os.ReadFile(f)
		check("fedrep", err)
		var rows []fedrep.PersonalRow
		if err := json.Unmarshal(b, &rows); err != nil {
			check("fedrep", fmt.Errorf("%s: %w", f, err))
		}
		parts = append(parts, rows)
	}
	rows := fedrep.MergePersonalRows(parts...)
	writeJSON("fedrep", jsonPath, rows)
	cfg := fedrep.DefaultPersonalStudy()
	cfg.Eps = nil
	for _, r := range rows {
		if r.Epsilon > 0 && !slices.Contains(cfg.Eps, r.Epsilon) {
			cfg.Eps = append(cfg.Eps, r.Epsilon)
		}
	}
	slices.Sort(cfg.Eps)
	fmt.Printf("Personalized Fashion-MNIST: 2×2-pooled pixels + constant (d = 197), each user its own classes ±1, δ = %g; accuracy = mean over users of the held-out accuracy of sign(⟨x, U v_user⟩); medians over the seeds run (Values in the JSON)\n", cfg.Delta)
	fmt.Print(fedrep.PersonalMarkdown(rows))
	fmt.Print(fedrep.PersonalTuningMarkdown(cfg, rows))
}

// runSelect measures the private rank selection of fedrep-private on the
// Fashion-MNIST users task through the host with the plugins in dir: for
// each seed, one fit with select=rank=2,3,5,9 at (ε, δ) = (1, 1e-6) and
// every candidate rank fitted alone with the same grant, each scored,
// non-privately, by the users' held-out accuracy.
func runSelect(ctx context.Context, dir string, seeds int) error {
	home, err := os.MkdirTemp("", "select-fedrep")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	c, err := client.New(client.Options{Home: home, PluginDirs: []string{dir}})
	if err != nil {
		return err
	}
	defer c.Close()
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
