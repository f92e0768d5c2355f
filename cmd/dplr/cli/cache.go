package cli

import (
	"cmp"
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/dplr/dplr/client"
)

// cacheUsage is the help text of dplr cache.
const cacheUsage = `Usage:
  dplr cache list  [--home DIR] [--json]
  dplr cache clear [--home DIR]

dplr keeps each data set it reads, converted to raw float64 arrays, in
$DPLR_HOME/cache so that plugins map it without copying and later runs skip
the conversion. The cache is bounded by $DPLR_CACHE_MAX_BYTES (e.g. 20G;
default: the machine's physical memory): the least recently used entries
are evicted to make room, and a data set larger than the bound is refused.
"list" shows the entries, least recently used first; "clear" removes them
all (budgets are not affected: the ledger does not live in the cache).
`

// cmdCache lists or clears the converted data sets kept in
// $DPLR_HOME/cache.
func cmdCache(_ context.Context, env *Env, args []string) error {
	if len(args) == 0 || (args[0] != "list" && args[0] != "clear") {
		return subcommandHelp(env, "cache", cacheUsage, "list or clear", []string{"list", "clear"}, args)
	}
	sub := args[0]
	fs := newFlags("cache "+sub, "[--home DIR]", env)
	home := fs.String("home", "", "dplr home directory (default $DPLR_HOME, else the user data directory)")
	asJSON := false
	if sub == "list" {
		fs.BoolVar(&asJSON, "json", false, "print the entries as JSON")
	}
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("cache %s takes no arguments (got %q)", sub, fs.Args())
	}
	dir := *home
	if dir == "" {
		h, err := client.HomeDir()
		if err != nil {
			return fail(ExitError, fmt.Errorf("cache: %w", err))
		}
		dir = h
	}
	cache := client.CacheDir(dir)
	if sub == "clear" {
		freed, err := client.ClearCache(dir)
		if err != nil {
			return fail(ExitError, err)
		}
		fmt.Fprintf(env.Stdout, "cleared %s: freed %s\n", cache, client.FormatBytes(freed))
		return nil
	}
	entries, err := client.ListCache(dir)
	if err != nil {
		return fail(ExitError, err)
	}
	if asJSON {
		return writeListJSON(env.Stdout, entries)
	}
	return cacheTable(env, cache, entries)
}

// cacheTable prints the entries of the cache directory as a table and a
// total against the cache bound.
func cacheTable(env *Env, cache string, entries []client.CacheEntry) error {
	if len(entries) == 0 {
		fmt.Fprintf(env.Stdout, "%s: empty\n", cache)
		return nil
	}
	var total int64
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HASH\tNAME\tKIND\tSHAPE\tSIZE\tLAST USED")
	for _, e := range entries {
		total += e.Bytes
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d×%d\t%s\t%s\n", e.Hash[:16], e.Name, e.Kind, e.N, e.P,
			client.FormatBytes(e.Bytes), e.LastUsed.Format(time.RFC3339))
	}
	tw.Flush()
	limit, err := client.CacheMaxBytes()
	if err != nil {
		return fail(ExitUsage, err)
	}
	limit = cmp.Or(limit, client.DefaultCacheMaxBytes())
	noun := "entries"
	if len(entries) == 1 {
		noun = "entry"
	}
	fmt.Fprintf(env.Stdout, "%d %s, %s of the %s limit (%s)\n", len(entries), noun, client.FormatBytes(total), client.FormatBytes(limit), cache)
	return nil
}
