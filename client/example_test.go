package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/dplr/dplr/client"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/sdk"
)

// generate draws a synthetic data set from one of dplr's models.
func generate(model string, params map[string]string) *gen.Generated {
	m, err := gen.Lookup(model)
	if err != nil {
		log.Fatal(err)
	}
	g, err := gen.Run(m, params, 1)
	if err != nil {
		log.Fatal(err)
	}
	return g
}

// PCA on spiked-covariance rows held in memory: Analyze Gauss releases the
// top principal components under (ε, δ)-DP.
func Example_pca() {
	g := generate("spiked", map[string]string{"n": "2000", "p": "10", "rank": "2"})

	c, err := client.New(client.Options{}) // $DPLR_HOME, the default plugin search path
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	res, err := c.Fit(context.Background(), client.FitRequest{
		Estimator: "pca-analyze-gauss",
		Params:    client.Params{}.Int("rank", 2).Float("clip", 12),
		Grant:     client.ApproxDP(1, 1e-6),
		Data:      client.InMemory(g.Data),
	})
	if err != nil {
		log.Fatal(err)
	}
	U, _ := res.Matrix("U")
	r, k := U.Dims()
	fmt.Printf("U: %d×%d\n", r, k)
	fmt.Println("guarantee:", res.Guarantee.Kind, "against", res.Guarantee.Neighbours)
	fmt.Println("recorded in the ledger:", res.Ledger != nil)
	// Output:
	// U: 10×2
	// guarantee: approx against one row replaced by an arbitrary row
	// recorded in the ledger: true
}

// Low-rank trace regression: rgrad-strict clips every sample, so its
// ρ-zCDP guarantee holds for any data.
func Example_traceRegression() {
	g := generate("trace-regression", map[string]string{"n": "2000", "d1": "6", "d2": "5", "rank": "2"})

	c, err := client.New(client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	res, err := c.Fit(context.Background(), client.FitRequest{
		Estimator: "rgrad-strict",
		Params:    client.Params{}.Int("rank", 2).Int("iterations", 3).Float("clip_y", 10).Float("clip", 5),
		Grant:     client.ZCDP(0.5),
		Data:      client.InMemory(g.Data),
	})
	if err != nil {
		log.Fatal(err)
	}
	M, _ := res.Matrix("M")
	r, k := M.Dims()
	fmt.Printf("M: %d×%d\n", r, k)
	fmt.Println("guarantee:", res.Guarantee.Kind)
	// Output:
	// M: 6×5
	// guarantee: zcdp
}

// Personalization: Private FedRep learns a representation shared by all
// users (public, user-level DP) and each user's head (per-user: meant for
// that user only).
func Example_personalization() {
	g := generate("users-lowrank", map[string]string{"users": "400", "samples": "10", "dim": "8", "rank": "2"})

	c, err := client.New(client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	res, err := c.Fit(context.Background(), client.FitRequest{
		Estimator: "fedrep-private",
		Params:    client.Params{}.Int("rank", 2).Int("iterations", 3),
		Grant:     client.ApproxDP(2, 1e-5),
		Data:      client.InMemory(g.Data),
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range res.Matrices {
		if m.Release == sdk.Public || m.Release == sdk.PerUser {
			r, k := m.Value.Dims()
			fmt.Printf("%s: %d×%d (%s)\n", m.Name, r, k, m.Release)
		}
	}
	fmt.Println("guarantee:", res.Guarantee.Kind, "against", res.Guarantee.Neighbours)
	// Output:
	// U: 8×2 (public)
	// V: 400×2 (per-user)
	// V_user_ids: 400×1 (per-user)
	// guarantee: approx against one user's whole data replaced (user level, n public)
}

// Budgets: set a data set's total, spend from it, and see a refusal arrive
// as ErrBudget with nothing spent.
func Example_budget() {
	g := generate("spiked", map[string]string{"n": "1000", "p": "5"})
	data := client.InMemory(g.Data)
	ctx := context.Background()

	c, err := client.New(client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if _, err := c.SetBudget(ctx, client.ByData(data), client.ZCDP(0.3), client.BudgetOptions{Name: "example-budget"}); err != nil {
		log.Fatal(err)
	}
	req := client.FitRequest{Estimator: "example-mean", Params: client.Params{}.Float("clip", 3), Grant: client.ZCDP(0.2), Data: data}
	if _, err := c.Fit(ctx, req); err != nil {
		log.Fatal(err)
	}
	_, err = c.Fit(ctx, req)
	fmt.Println("second fit refused:", errors.Is(err, client.ErrBudget), "exit code", client.ExitCode(err))
	st, err := c.ShowBudget(ctx, client.ByName("example-budget"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("runs: %d succeeded; remaining ρ = %.1f\n", st.Runs.Succeeded, st.Remaining.Rho)
	// Output:
	// second fit refused: true exit code 3
	// runs: 1 succeeded; remaining ρ = 0.1
}
