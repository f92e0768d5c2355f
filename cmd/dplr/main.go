// Command dplr is the host of the dplr engine for differentially private
// low-rank estimation: it discovers estimator plugins, runs them on data
// under a privacy budget, and keeps the budget ledger. Run "dplr help".
package main

import (
	"os"

	"github.com/dplr/dplr/cmd/dplr/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
