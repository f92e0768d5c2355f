package cli

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/client"
	"github.com/dplr/dplr/engine/data"
)

// cmdTransform is `dplr transform --model RUN_DIR --data FILE [--out FILE]`:
// post-processing of a released model on new rows by the plugin of the
// estimator that fitted it, no budget involved.
func cmdTransform(ctx context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("transform", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var df dataFlags
	df.register(fs)
	var pf pluginFlags
	pf.register(fs)
	fs.StringVar(&df.path, "rows", "", "alias of --data")
	// A transform reads rows only: --labels is the personalization
	// transform's option, not a file of class labels.
	fs.Lookup("labels").Usage = "personalization model: print signs (yes), scores (no), or signs for fedrep-classify* (auto)"
	model := fs.String("model", "", "`RUN_DIR`: the output directory of a dplr fit (its result.json and .npy outputs)")
	out := fs.String("out", "", "`FILE` for the transformed rows: .npy, or .csv (default: stdout, as CSV)")
	user := fs.String("user", "", "personalization model (fedrep-*): the `ID` of the user whose rows these are")
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, `Usage: dplr transform --model RUN_DIR --data FILE [--out FILE] [--user ID] [data flags]

Maps new rows through a released model, in the plugin of the estimator
that fitted it. For PCA estimators: the scores (x − mean)·U with the
released components U and, when the fit used center=private, the released
private mean (with feature_scale=private or released, each column is first divided by
the released feature_scale). For a personalization model (fedrep-*): the
predictions ⟨x, U v_user⟩ for the rows of ONE user (--user), or their
signs for a classifier; only that user's row of V is read. This is
post-processing of released outputs: it spends no budget, writes nothing
to the ledger and works on data that has no budget. The data must be read
the same way as for the fit (same --scale, same columns); the fit's
--column-scales are recorded in the model and applied without the flag.
It never overwrites the model or an input.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return fail(ExitUsage, err)
	}
	if fs.NArg() > 0 {
		return usagef("transform: unexpected argument %q", fs.Arg(0))
	}
	if *model == "" || df.path == "" {
		return usagef("transform: --model and --data are required")
	}
	if ext := strings.ToLower(filepath.Ext(*out)); *out != "" && ext != ".npy" && ext != ".csv" {
		return usagef("transform: --out %s: give a .npy or .csv file", *out)
	}
	if *out != "" {
		if err := checkTransformOut(*out, *model, df.path, df.response, df.users, df.columnScales); err != nil {
			return err
		}
	}
	m, err := client.ReadModel(*model)
	if err != nil {
		return fmt.Errorf("transform: %w", err)
	}
	opts := map[string]string{}
	if *user != "" {
		opts["user"] = *user
	}
	if df.labels != "" {
		opts["labels"], df.labels = df.labels, ""
	}
	l, err := df.locate(data.Rows)
	if err != nil {
		return err
	}
	switch {
	case len(l.opt.ColumnScales) == 0:
		l.opt.ColumnScales = m.ColumnScales // the fit's public column scales
	case !slices.Equal(l.opt.ColumnScales, m.ColumnScales):
		return usagef("transform: --column-scales differ from the scales the model was fitted with (%v): omit the flag to use the model's", m.ColumnScales)
	}
	ds, err := client.LoadData(ctx, l.path, l.opt)
	if err != nil {
		return fail(ExitData, fmt.Errorf("data: %w", err))
	}
	home, err := pf.checkedHome(env)
	if err != nil {
		return err
	}
	c, err := pf.newClient(env, home, 0)
	if err != nil {
		return err
	}
	defer c.Close()
	res, err := c.Transform(ctx, client.TransformRequest{Model: *model, Data: client.Data{Dataset: ds}, Options: opts})
	if err != nil {
		return fmt.Errorf("transform: %w", err)
	}
	if *out == "" {
		if err := writeCSV(env.Stdout, res.Y); err != nil {
			return fail(ExitError, fmt.Errorf("writing the output: %w", err))
		}
		return nil
	}
	if err := writeMatrix(*out, res.Y); err != nil {
		return fail(ExitError, err)
	}
	r, cols := res.Y.Dims()
	fmt.Fprintf(env.Stdout, "transform: %d×%d %s written to %s (post-processing: no budget spent, nothing recorded)\n", r, cols, res.Doc, *out)
	return nil
}

// writeMatrix writes m as .npy or .csv by the file's extension, atomically.
func writeMatrix(path string, m *mat.Dense) error {
	r, c := m.Dims()
	if strings.ToLower(filepath.Ext(path)) == ".npy" {
		if err := client.SaveNPY(path, []int{r, c}, mat.DenseCopyOf(m).RawMatrix().Data); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		return nil
	}
	return client.WriteFileAtomic(path, func(w io.Writer) error { return writeCSV(w, m) })
}

// writeCSV writes m to w, a row a line.
func writeCSV(w io.Writer, m *mat.Dense) error {
	b := bufio.NewWriter(w)
	r, c := m.Dims()
	for i := 0; i < r; i++ {
		for j, v := range m.RawRowView(i)[:c] {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		}
		b.WriteByte('\n')
	}
	return b.Flush()
}

// checkTransformOut refuses an --out that would overwrite the model (an
// existing file in its directory, or the directory itself) or one of the
// inputs, or that exists and is not a regular file. A new file beside the
// model is allowed.
func checkTransformOut(out, modelDir string, inputs ...string) error {
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			return filepath.Clean(p)
		}
		if r, err := filepath.EvalSymlinks(a); err == nil {
			return r
		}
		// out may not exist yet: resolve its directory
		if r, err := filepath.EvalSymlinks(filepath.Dir(a)); err == nil {
			return filepath.Join(r, filepath.Base(a))
		}
		return a
	}
	o, m := abs(out), abs(modelDir)
	st, err := os.Stat(out)
	if o == m || (err == nil && strings.HasPrefix(o, m+string(filepath.Separator))) {
		return usagef("transform: --out %s is a file of the model in %s: it would overwrite the model; write to a new file", out, modelDir)
	}
	if err != nil {
		return nil // a new file
	}
	if !st.Mode().IsRegular() {
		return usagef("transform: --out %s exists and is not a regular file", out)
	}
	for _, in := range inputs {
		if in == "" {
			continue
		}
		if ist, err := os.Stat(in); err == nil && os.SameFile(st, ist) {
			return usagef("transform: --out %s is the input %s: it would overwrite it", out, in)
		}
	}
	return nil
}
