// Package study holds the subcommands "bench study pca|fedrep|orbit|rgrad":
// each estimator family's accuracy study (its logic in
// bench/studies/<family>), printed as markdown tables or JSON.
package study

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// parseList parses the comma-separated list s with parse, refusing as a
// bad what an item that parse rejects or ok does not accept.
func parseList[T any](s, what string, parse func(string) (T, error), ok func(T) bool) ([]T, error) {
	var out []T
	for _, f := range strings.Split(s, ",") {
		v, err := parse(strings.TrimSpace(f))
		if err != nil || !ok(v) {
			return nil, fmt.Errorf("bad %s %q", what, f)
		}
		out = append(out, v)
	}
	return out, nil
}

// parseFloat is strconv.ParseFloat, also reading "∞" as +Inf.
func parseFloat(s string) (float64, error) {
	if s == "∞" {
		return math.Inf(1), nil
	}
	return strconv.ParseFloat(s, 64)
}

// anyValue accepts every value.
func anyValue[T any](T) bool { return true }

// check reports a non-nil err from the study named name and exits with
// status 1.
func check(name string, err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench study %s: %v\n", name, err)
		os.Exit(1)
	}
}

// must returns v, or reports err (a bad flag value) and exits with status 2.
func must[T any](v T, err error) T {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench study:", err)
		os.Exit(2)
	}
	return v
}

// writeJSON writes v as indented JSON to path ("-": standard output, "":
// nowhere), or reports the failure of the study named name and exits.
func writeJSON(name, path string, v any) {
	if path == "" {
		return
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err == nil && path == "-" {
		_, err = os.Stdout.Write(append(b, '\n'))
	} else if err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	check(name, err)
}

// progress prints progress lines on standard error unless quiet.
func progress(quiet bool) func(string) {
	if quiet {
		return nil
	}
	return func(s string) { fmt.Fprintln(os.Stderr, s) }
}
