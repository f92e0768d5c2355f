package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/plugins/fedrep/predict"
)

// transformFedRepUsage is the help of the personalization predict.
const transformFedRepUsage = `usage: dplr transform --model DIR --user ID --data FILE [--labels yes|no|auto] [--out FILE]

Applies a fitted personalization model (fedrep-private, fedrep-nonprivate,
fedrep-privaltmin, fedrep-classify) to new rows of ONE user: prints
⟨x, U v_user⟩ for every row x of FILE (CSV or .npy, d columns), or its sign
(+1/−1) for a classifier. DIR is the output directory of the fit (result.json,
U.npy, V.npy, V_user_ids.npy). Only the row of V that belongs to the user is
read from V.npy; the other users' heads are not touched. No budget is spent:
the prediction is post-processing of the released U and the user's own head.
`

// runTransformFedRep is the predict of the personalization estimators;
// "dplr transform" dispatches to it when the model directory holds a
// fedrep-* fit.
func runTransformFedRep(_ context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("transform", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	model := fs.String("model", "", "`DIR` of the fit")
	user := fs.String("user", "", "the user's `ID` (as in the data set)")
	rows := fs.String("data", "", "`FILE` of the user's new rows (CSV or .npy, d columns)")
	fs.StringVar(rows, "rows", "", "alias of --data")
	labels := fs.String("labels", "auto", "print signs (yes), scores (no), or signs for fedrep-classify* (auto)")
	out := fs.String("out", "", "write the predictions to `FILE` (default stdout)")
	if err := fs.Parse(args); err != nil {
		return usagef("%v\n%s", err, transformFedRepUsage)
	}
	if *model == "" || *user == "" || *rows == "" {
		return usagef("--model, --user and --data are required\n%s", transformFedRepUsage)
	}
	id, err := strconv.ParseInt(*user, 10, 64)
	if err != nil {
		return usagef("--user %q: want an integer id", *user)
	}
	var rep struct {
		Estimator string        `json:"estimator"`
		Outputs   OutputsReport `json:"outputs"`
		Data      DataReport    `json:"data"`
	}
	if *out != "" {
		if err := checkTransformOut(*out, *model, *rows); err != nil {
			return err
		}
	}
	res, err := regularModelFile(filepath.Join(*model, "result.json"))
	if err != nil {
		return usagef("reading the model: %v", err)
	}
	b, err := os.ReadFile(res)
	if err != nil {
		return usagef("reading the model: %v", err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return usagef("reading %s: %v", filepath.Join(*model, "result.json"), err)
	}
	if !strings.HasPrefix(rep.Estimator, "fedrep-") {
		return usagef("%s holds a %s fit, not a personalization model", *model, rep.Estimator)
	}
	classify := strings.HasPrefix(rep.Estimator, "fedrep-classify")
	switch *labels {
	case "yes":
		classify = true
	case "no":
		classify = false
	case "auto":
	default:
		return usagef("--labels %q: want yes, no or auto", *labels)
	}
	file := func(name string) string {
		for _, m := range rep.Outputs.Matrices {
			if m.Name == name && m.File != "" {
				return filepath.Join(*model, m.File)
			}
		}
		return ""
	}
	uPath, vPath := file("U"), file("V")
	if uPath == "" || vPath == "" {
		return usagef("%s has no U or no per-user heads V (was the fit run with output_v=false?)", *model)
	}
	for _, p := range []string{uPath, vPath} {
		if _, err := regularModelFile(p); err != nil {
			return fail(ExitData, err)
		}
	}
	uds, err := dataio.Load(uPath, dataio.LoadOptions{Kind: data.Rows})
	if err != nil {
		return fail(ExitData, fmt.Errorf("reading U: %w", err))
	}
	row, err := headRow(file("V_user_ids"), id, *model)
	if err != nil {
		return err
	}
	vf, err := os.Open(vPath)
	if err != nil {
		return fail(ExitData, fmt.Errorf("opening V: %w", err))
	}
	defer vf.Close()
	head, _, err := predict.ReadNPYRow(vf, row)
	if err != nil {
		return usagef("user %d: %v", id, err)
	}
	xs, err := dataio.Load(*rows, dataio.LoadOptions{Kind: data.Rows, ColumnScales: rep.Data.ColumnScales})
	if err != nil {
		return fail(ExitData, fmt.Errorf("reading the rows: %w", err))
	}
	pred, err := predict.Predict(mat.DenseCopyOf(uds.X), head, xs.X, classify)
	if err != nil {
		return fail(ExitData, err)
	}
	return writePredictions(env, pred, id, *out)
}

// headRow is the row of V that holds user id's head: the user's position in
// V_user_ids (idPath) when the fit wrote it, the id itself otherwise.
func headRow(idPath string, id int64, model string) (int, error) {
	if idPath == "" {
		return int(id), nil
	}
	ids, err := dataio.Load(idPath, dataio.LoadOptions{Kind: data.Rows})
	if err != nil {
		return 0, fail(ExitData, fmt.Errorf("reading the user ids: %w", err))
	}
	for i := 0; i < ids.N(); i++ {
		if ids.X.At(i, 0) == float64(id) {
			return i, nil
		}
	}
	return 0, usagef("user %d has no head in %s", id, model)
}

// writePredictions writes pred to out (.npy or .csv), or one per line to
// stdout when out is empty.
func writePredictions(env *Env, pred []float64, id int64, out string) error {
	if out != "" {
		if err := writeMatrix(out, mat.NewDense(len(pred), 1, pred)); err != nil {
			return fail(ExitError, err)
		}
		fmt.Fprintf(env.Stdout, "transform: %d predictions for user %d written to %s (post-processing: no budget spent, nothing recorded)\n", len(pred), id, out)
		return nil
	}
	for _, p := range pred {
		if _, err := fmt.Fprintln(env.Stdout, strconv.FormatFloat(p, 'g', -1, 64)); err != nil {
			return fail(ExitError, fmt.Errorf("writing the predictions: %w", err))
		}
	}
	return nil
}

// fedrepTransformRequested reports whether a `dplr transform` command line
// names (with --model DIR or --model=DIR) the output directory of a
// fedrep-* fit, whose predict runTransformFedRep serves. cmdTransform
// calls it first and delegates when it is true.
func fedrepTransformRequested(args []string) bool {
	dir := ""
	for i, a := range args {
		switch {
		case a == "--model" || a == "-model":
			if i+1 < len(args) {
				dir = args[i+1]
			}
		case strings.HasPrefix(a, "--model=") || strings.HasPrefix(a, "-model="):
			dir = a[strings.Index(a, "=")+1:]
		}
	}
	if dir == "" {
		return false
	}
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		return false
	}
	var rep struct {
		Estimator string `json:"estimator"`
	}
	return json.Unmarshal(b, &rep) == nil && strings.HasPrefix(rep.Estimator, "fedrep-")
}
