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
const transformFedRepUsage = `usage: dplr transform --model DIR --user ID --rows FILE [--labels yes|no|auto] [--out FILE]

Applies a fitted personalization model (fedrep-private, fedrep-nonprivate,
fedrep-privaltmin, fedrep-classify) to new rows of ONE user: prints
⟨x, U v_user⟩ for every row x of FILE (CSV or .npy, d columns), or its sign
(+1/−1) for a classifier. DIR is the output directory of the fit (result.json,
U.npy, V.npy, V_user_ids.npy). Only the row of V that belongs to the user is
read from V.npy; the other users' heads are not touched. No budget is spent:
the prediction is post-processing of the released U and the user's own head.
`

// runTransformFedRep is the predict of the personalization estimators,
// meant to be dispatched by "dplr transform" when the model directory holds a
// fedrep-* fit (see the final report of the fedrep2 branch).
func runTransformFedRep(_ context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("transform", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	model := fs.String("model", "", "`DIR` of the fit")
	user := fs.String("user", "", "the user's `ID` (as in the data set)")
	rows := fs.String("rows", "", "`FILE` of the user's new rows (CSV or .npy)")
	labels := fs.String("labels", "auto", "print signs (yes), scores (no), or signs for fedrep-classify* (auto)")
	out := fs.String("out", "", "write the predictions to `FILE` (default stdout)")
	if err := fs.Parse(args); err != nil {
		return usagef("%v\n%s", err, transformFedRepUsage)
	}
	if *model == "" || *user == "" || *rows == "" {
		return usagef("--model, --user and --rows are required\n%s", transformFedRepUsage)
	}
	id, err := strconv.ParseInt(*user, 10, 64)
	if err != nil {
		return usagef("--user %q: want an integer id", *user)
	}
	var rep struct {
		Estimator string        `json:"estimator"`
		Outputs   OutputsReport `json:"outputs"`
	}
	b, err := os.ReadFile(filepath.Join(*model, "result.json"))
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
	uds, err := dataio.Load(uPath, dataio.LoadOptions{Kind: data.Rows})
	if err != nil {
		return fail(ExitData, fmt.Errorf("reading U: %w", err))
	}
	row := int(id)
	if idPath := file("V_user_ids"); idPath != "" {
		ids, err := dataio.Load(idPath, dataio.LoadOptions{Kind: data.Rows})
		if err != nil {
			return fail(ExitData, fmt.Errorf("reading the user ids: %w", err))
		}
		row = -1
		for i := 0; i < ids.N(); i++ {
			if ids.X.At(i, 0) == float64(id) {
				row = i
				break
			}
		}
		if row < 0 {
			return usagef("user %d has no head in %s", id, *model)
		}
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
	xs, err := dataio.Load(*rows, dataio.LoadOptions{Kind: data.Rows})
	if err != nil {
		return fail(ExitData, fmt.Errorf("reading the rows: %w", err))
	}
	pred, err := predict.Predict(mat.DenseCopyOf(uds.X), head, xs.X, classify)
	if err != nil {
		return fail(ExitData, err)
	}
	w := env.Stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return fail(ExitError, fmt.Errorf("creating %s: %w", *out, err))
		}
		defer f.Close()
		w = f
	}
	for _, p := range pred {
		if _, err := fmt.Fprintln(w, strconv.FormatFloat(p, 'g', -1, 64)); err != nil {
			return fail(ExitError, fmt.Errorf("writing the predictions: %w", err))
		}
	}
	return nil
}
