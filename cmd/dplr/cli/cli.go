// Package cli implements the dplr command line: plugin discovery and
// catalogue, fitting an estimator through its plugin with budget charging,
// synthetic data generation, the budget ledger and benchmarks. cmd/dplr is
// a thin main around Main.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/dplr/dplr/client"
)

// Exit codes scripts can rely on; exitCodesHelp says the same in words
// (`dplr help`), and so does docs/ledger.md.
const (
	ExitOK        = 0 // success
	ExitError     = 1 // runtime error not covered below (ledger, writing outputs)
	ExitUsage     = 2 // bad command line, parameters, budget values, --out or dplr home; refused before reserving (nothing spent)
	ExitBudget    = 3 // the privacy budget refused the run (nothing spent)
	ExitPlugin    = 4 // a plugin failed (crash, hang, --timeout, malformed output, unverifiable privacy cost)
	ExitData      = 5 // the data could not be read or failed validation (nothing spent)
	ExitEstimator = 6 // the estimator failed while running (refunded if before its first privacy step)
	ExitAudit     = 7 // dplr audit found evidence against the estimator's privacy claim
	// ExitInterrupted is 128 + SIGINT, the shell's convention: the command
	// was interrupted (Ctrl-C or SIGTERM). A fit interrupted before its
	// first privacy step is refunded; after it, it stays charged.
	ExitInterrupted = 130
)

// exitCodesHelp documents the exit codes for `dplr help` and `dplr fit -h`.
const exitCodesHelp = `Exit codes:
  0    success
  1    runtime error (ledger, writing outputs); a released run stays charged
  2    usage: bad flags, parameters, absurd budget values (e.g. ε > 100),
       an unwritable --out, a dplr home that is not a directory, a request
       the estimator's pre-flight check refused or that would exceed
       --max-memory; nothing was run or spent
  3    the budget ledger refused the run; nothing spent
  4    plugin failure: it did not start, crashed, hung past --timeout, sent
       malformed output or a privacy cost that does not follow from its noise;
       charged its full grant once it announced a privacy step or returned a
       result, refunded before
  5    the data could not be read or failed validation, or the budget ledger
       is damaged or was tampered with; nothing spent
  6    the estimator failed while running, or anything failed once the run
       was charged (never 5); refunded if before its first privacy step,
       charged its full grant after
  130  interrupted (Ctrl-C, SIGTERM); refunded if before the first privacy
       step, charged its full grant after
`

// exitError carries an exit code with an error.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func fail(code int, err error) error { return &exitError{code: code, err: err} }

func usagef(format string, args ...any) error { return fail(ExitUsage, fmt.Errorf(format, args...)) }

// subcommandHelp answers a command with subcommands called without a known
// one: its usage on stdout and success when help was asked for, else the
// usage on stderr and a usage error (missing says what is needed).
func subcommandHelp(env *Env, name, usage, missing string, subs []string, args []string) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fmt.Fprint(env.Stdout, usage)
		return nil
	}
	fmt.Fprint(env.Stderr, usage)
	if len(args) == 0 {
		return usagef("%s needs a subcommand: %s", name, missing)
	}
	return usagef("%s: unknown subcommand %q (want %s)", name, args[0], strings.Join(subs, ", "))
}

// Env is what a command runs with.
type Env struct {
	Stdout, Stderr io.Writer
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *Env, args []string) error
}

func commands() []command {
	return []command{
		{"plugins", "list the plugins found and the estimators they serve", cmdPlugins},
		{"describe", "show an estimator's parameters, guarantee and references", cmdDescribe},
		{"plan", "show what a fit would spend and whether it can beat a random answer, spending nothing", cmdPlan},
		{"fit", "run an estimator on a data set under a privacy budget", cmdFit},
		{"transform", "project new rows with a fitted model (post-processing: no budget)", cmdTransform},
		{"gen", "generate a synthetic data set with ground truth", cmdGen},
		{"budget", "set, show and audit a data set's total privacy budget", cmdBudget},
		{"audit", "empirically check an estimator's privacy claim on neighbouring data sets", cmdAudit},
		{"cache", "list or clear the converted data sets kept in $DPLR_HOME/cache", cmdCache},
		{"demo", "generate spiked data and compare DP PCA estimators against the truth", cmdDemo},
		{"version", "print the version", cmdVersion},
	}
}

// Main runs the dplr command line and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	env := &Env{Stdout: stdout, Stderr: stderr}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 1 {
			args = []string{args[1], "-h"}
		} else {
			usage(stdout)
			if len(args) == 0 {
				return ExitUsage
			}
			return ExitOK
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, c := range commands() {
		if c.name == args[0] {
			err := c.run(ctx, env, args[1:])
			if err != nil && ctx.Err() != nil && !errors.Is(err, flag.ErrHelp) {
				// Whatever failed, it failed because the user interrupted it.
				err = fail(ExitInterrupted, fmt.Errorf("interrupted: %w", err))
			}
			return report(env, err)
		}
	}
	fmt.Fprintf(stderr, "dplr: unknown command %q\n\n", args[0])
	usage(stderr)
	return ExitUsage
}

func report(env *Env, err error) int {
	if err == nil {
		return ExitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	fmt.Fprintf(env.Stderr, "dplr: %v\n", err)
	return exitCode(err)
}

// exitCode is err's exit code: the one fail gave it, else the class of an
// error from the client package.
func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return client.ExitCode(err)
}

func usage(w io.Writer) {
	fmt.Fprint(w, `dplr: differentially private low-rank estimation.

Usage: dplr COMMAND [flags] [arguments]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Run "dplr COMMAND -h" for a command's flags.

Environment:
  DPLR_HOME         where the budget ledger, data cache and user plugins live
                    (default: $XDG_DATA_HOME/dplr or ~/.local/share/dplr)
  DPLR_PLUGIN_PATH  extra plugin directories (searched first), separated by ':'

`)
	fmt.Fprint(w, "\n"+exitCodesHelp)
}

// commandExamples are the worked examples a command's help ends with,
// keyed by the flag set's name.
var commandExamples = map[string]string{
	"fit": `  dplr gen spiked --out data/spiked --set n=5000 --set p=30
  dplr fit pca-analyze-gauss --data data/spiked --epsilon 1 --delta 1e-6 --set rank=2 --set clip=12
  dplr fit example-mean --data rows.csv --rho 0.05 --set clip=3 --out out/mean --json

Estimator parameters (--set) differ by estimator: see "dplr describe ESTIMATOR".

` + exitCodesHelp,
	"plan": `  dplr plan pca-amin --data digits.csv --epsilon 1 --set rank=5
  dplr plan pca-analyze-gauss --data data/spiked --epsilon 1 --delta 1e-6 --set rank=2 --json

plan takes the same arguments as fit (--out, --seed and --timeout are unused) and
reserves nothing. The plugin sees only the data's shape (n, p), never its values.`,
	"gen": `  dplr gen --list
  dplr gen spiked --out data/spiked --seed 1 --set n=5000 --set p=30 --set rank=2
  dplr gen trace-regression --out data/trace --set n=4000 --set d1=20 --set d2=10`,
	"describe": `  dplr describe pca-cxz
  dplr describe example-mean --json`,
	"plugins": `  dplr plugins
  dplr plugins --json --plugin-dir ./my-plugins`,
	"demo": `  dplr demo --out /tmp/dplr-demo`,
}

// newFlags returns the flag set of a command. Help (-h) is printed to
// stdout; a parse error is reported once, by parse, with a pointer to the
// help instead of the whole flag list.
func newFlags(name, synopsis string, env *Env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(env.Stdout, "Usage: dplr %s %s\n\nFlags (write -flag or --flag):\n", name, synopsis)
		fs.SetOutput(env.Stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		if ex := commandExamples[name]; ex != "" {
			fmt.Fprintf(env.Stdout, "\nExamples:\n%s\n", ex)
		}
	}
	return fs
}

// parse parses a command's flags: -h prints the help and returns
// flag.ErrHelp (exit 0); any other error is a usage error naming the
// problem and where the help is.
func parse(fs *flag.FlagSet, args []string) error {
	help := fs.Usage
	fs.Usage = func() {} // flag calls Usage on errors too; print help only when asked
	err := fs.Parse(args)
	fs.Usage = help
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		help()
		return err
	}
	return fail(ExitUsage, fmt.Errorf("%w (see \"dplr %s -h\")", err, fs.Name()))
}

// Version is the dplr version.
const Version = "0.1.0"

func cmdVersion(_ context.Context, env *Env, args []string) error {
	fmt.Fprintf(env.Stdout, "dplr %s (plugin protocol 1)\n", Version)
	return nil
}

// multiFlag collects repeated --set key=value flags.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func parseSets(sets []string) (map[string]string, error) {
	out := map[string]string{}
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, usagef("--set %q: want key=value", s)
		}
		if _, dup := out[k]; dup {
			return nil, usagef("--set %s given twice", k)
		}
		out[k] = strings.TrimSpace(v)
	}
	return out, nil
}
