package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/dplr/dplr/engine/ledger"
	"github.com/dplr/dplr/engine/privacy"
)

// The host's side of one `dplr fit`: reserve the run's grant before the
// estimator draws any noise, then settle with what its accountant accepted.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "dplr-ledger-example")
	defer os.RemoveAll(dir)

	l, err := ledger.Open(ctx, dir) // normally ledger.HomeDir(), or --home
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()

	hash := "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" // the data set's SHA-256
	// dplr budget set: the data owner allows ε = 1 (pure) in total. Each
	// run is granted 0.4 but spends 0.3: a fourth run no longer fits.
	if err := l.SetBudget(ctx, hash, "toy", privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1}); err != nil {
		fmt.Println(err)
		return
	}

	for i := 0; i < 4; i++ {
		grant := privacy.Grant{Kind: privacy.GrantPure, Epsilon: 0.4}
		id, err := l.Reserve(ctx, hash, ledger.ReserveRequest{Estimator: "pca", Params: map[string]string{"rank": "2"}, Grant: grant})
		if errors.Is(err, ledger.ErrBudgetExceeded) {
			fmt.Println("run", i, "refused: budget exceeded")
			continue
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		// ... run the estimator with an accountant for grant ...
		acct, _ := privacy.NewAccountant(grant)
		_, _ = acct.Laplace("mean", 1, 10, privacy.Budget{Noise: privacy.NoisePure, Epsilon: 0.3})
		var runErr error // the run's error, if it failed
		if err := l.Settle(ctx, id, ledger.OutcomeOf(runErr, acct.Steps())); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("run", i, "charged", 0.3)
	}

	// dplr budget show
	st, err := l.Show(ctx, hash)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("spent ε = %.2f, remaining ε = %.2f, %d runs\n", st.Spent.Epsilon, st.Remaining.Epsilon, st.Runs.Total)
	// Output:
	// run 0 charged 0.3
	// run 1 charged 0.3
	// run 2 charged 0.3
	// run 3 refused: budget exceeded
	// spent ε = 0.90, remaining ε = 0.10, 3 runs
}
