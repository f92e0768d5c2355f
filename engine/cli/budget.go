package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"text/tabwriter"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/ledger"
)

func cmdBudget(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 || (args[0] != "set" && args[0] != "show" && args[0] != "history") {
		// Asked for help: stdout, exit 0. Otherwise a usage error: stderr, exit 2.
		helpAsked := len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help")
		w := env.Stderr
		if helpAsked {
			w = env.Stdout
		}
		fmt.Fprint(w, `Usage:
  dplr budget set     (--data PATH | --hash HEX) (--epsilon E [--delta D] | --rho R) [--name NAME]
  dplr budget show    (--data PATH | --hash HEX) [--json]
  dplr budget history (--data PATH | --hash HEX) [--json]

A data set is identified by the SHA-256 of its content, so the same data
read from another file or format shares its budget. Once a total is set,
every dplr fit on that data set reserves its grant inside one database
transaction before any noise is drawn, and is refused (exit 3, nothing
spent) if the total would be exceeded. Runs on a data set without a total
are recorded but not limited. --kind (rows, trace, users) says how to read
--data when it is a file; "dplr budget SUBCOMMAND -h" lists every flag.

Examples:
  dplr budget set --data data/spiked --epsilon 3 --delta 1e-5
  dplr budget show --data data/spiked
  dplr budget history --data data/spiked --json
`)
		switch {
		case helpAsked:
			return nil
		case len(args) == 0:
			return usagef("budget needs a subcommand: set, show or history")
		}
		return usagef("budget: unknown subcommand %q (want set, show or history)", args[0])
	}
	sub := args[0]
	fs := newFlags("budget "+sub, "(--data PATH | --hash HEX) ...", env)
	var df dataFlags
	df.register(fs)
	kind := fs.String("kind", "rows", "data kind for reading a --data file: rows, trace or users (a `dplr gen` directory says its own)")
	hash := fs.String("hash", "", "identify the data set by its content hash instead of reading --data")
	home := fs.String("home", "", "dplr home directory (default $DPLR_HOME, else the user data directory)")
	asJSON := fs.Bool("json", false, "print as JSON")
	var gf grantFlags
	if sub == "set" {
		gf.register(fs, "total budget of the data set")
	}
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	dir := (&pluginFlags{home: *home}).homeDir(env)
	h := *hash
	name := df.name
	if h == "" {
		if df.path == "" {
			return usagef("budget %s needs --data PATH or --hash HEX", sub)
		}
		k := data.Kind(*kind)
		if !flagGiven(fs, "kind") {
			var why string
			k, why = df.inferKind()
			if why != "" {
				fmt.Fprintf(env.Stderr, "dplr: reading %s as %s data (%s; --kind rows|trace|users overrides): the budget applies to fits that read it the same way\n", df.path, k, why)
			}
		}
		loc, err := df.locate(k)
		if err != nil {
			return err
		}
		hd, err := loc.prepare(ctx, dir)
		if err != nil {
			return err
		}
		h = hd.Hash
		if name == "" {
			name = hd.Name
		}
	} else if df.path != "" {
		return usagef("give --data or --hash, not both")
	}
	led, err := ledger.Open(ctx, dir)
	if err != nil {
		return fail(ExitError, fmt.Errorf("opening the budget ledger: %w", err))
	}
	defer led.Close()
	switch sub {
	case "set":
		g, err := gf.grant()
		if err != nil {
			return err
		}
		if err := led.SetBudget(ctx, h, name, g); err != nil {
			if errors.Is(err, ledger.ErrBudgetExceeded) || errors.Is(err, ledger.ErrIncompatible) {
				return fail(ExitBudget, err)
			}
			if errors.Is(err, ledger.ErrInvalid) {
				return fail(ExitUsage, err)
			}
			return err
		}
		st, err := led.Show(ctx, h)
		if err != nil {
			return err
		}
		if *asJSON {
			return dataio.WriteJSON(env.Stdout, st, dataio.JSONOptions{})
		}
		fmt.Fprintln(env.Stdout, st.String())
	case "show":
		st, err := led.Show(ctx, h)
		if err != nil {
			return fail(ExitUsage, err)
		}
		if *asJSON {
			return dataio.WriteJSON(env.Stdout, st, dataio.JSONOptions{})
		}
		fmt.Fprintln(env.Stdout, st.String())
	case "history":
		runs, err := led.History(ctx, h)
		if err != nil {
			return fail(ExitUsage, err)
		}
		if *asJSON {
			if runs == nil {
				runs = []ledger.Run{}
			}
			return dataio.WriteJSON(env.Stdout, runs, dataio.JSONOptions{})
		}
		tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "run\twhen (UTC)\testimator\tstate\tgrant\tcharged\n")
		for _, r := range runs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.ReservedAt.UTC().Format("2006-01-02 15:04:05"), r.Estimator, r.State, ledger.GrantString(r.Grant), r.Charge)
		}
		return tw.Flush()
	}
	return nil
}

// inferKind is the data kind `dplr budget` reads --data as when --kind is
// not given, so that it hashes the data the way the fits that use it do: a
// `dplr gen` directory says its own kind; for a file, user ids (--users,
// --user-column) mean users data, a matrix shape or a response (--d1,
// --d2, --response) trace data, and anything else rows. why explains an
// inference from a file's flags ("" for a directory, whose kind is known).
func (df *dataFlags) inferKind() (k data.Kind, why string) {
	if st, err := os.Stat(df.path); err == nil && st.IsDir() {
		if man, err := readManifest(df.path); err == nil {
			return man.Kind, ""
		}
	}
	switch {
	case df.users != "" || df.userCol != "":
		return data.Users, "user ids were given"
	case df.d1 > 0 || df.d2 > 0 || df.response != "":
		return data.Trace, "a matrix shape or a response was given"
	}
	// A CSV whose header has the default user-id column is read by the
	// per-user estimators as users data.
	var delim rune
	if r := []rune(df.delimiter); len(r) == 1 {
		delim = r[0]
	}
	if rec, err := dataio.CSVFirstRecord(df.path, delim); err == nil && slices.Contains(rec, "user") {
		return data.Users, "its CSV header has a user column"
	}
	return data.Rows, "no user ids, matrix shape or response was given"
}

// flagGiven reports whether the named flag was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
