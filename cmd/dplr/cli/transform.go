package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
)

// TransformModel is what `dplr transform` reads from a fit's output
// directory: result.json's estimator, parameters and released outputs.
// Only public outputs are ever loaded (an evaluation-only output is never a
// model part).
type TransformModel struct {
	Dir       string
	Estimator string
	Params    map[string]any
	// ColumnScales are the public per-column scales the fit divided its
	// columns by (--column-scales), applied to the new data too.
	ColumnScales []float64
	matrices     map[string]MatrixReport
	scalars      map[string]float64
}

// Matrix loads the released public matrix name (nil, nil when the run did
// not release it).
func (m *TransformModel) Matrix(name string) (*mat.Dense, error) {
	mr, ok := m.matrices[name]
	if !ok {
		return nil, nil
	}
	if mr.File == "" {
		if len(mr.Value) != mr.Rows {
			return nil, fmt.Errorf("model output %s has neither a file nor its %d rows inline", name, mr.Rows)
		}
		out := mat.NewDense(mr.Rows, mr.Cols, nil)
		for i, row := range mr.Value {
			out.SetRow(i, row)
		}
		return out, nil
	}
	path, err := regularModelFile(filepath.Join(m.Dir, mr.File))
	if err != nil {
		return nil, fmt.Errorf("model output %s: %w", name, err)
	}
	ds, err := dataio.Load(path, dataio.LoadOptions{})
	if err != nil {
		return nil, fmt.Errorf("model output %s: %w", name, err)
	}
	if r, c := ds.X.Dims(); r != mr.Rows || c != mr.Cols {
		return nil, fmt.Errorf("model output %s: %s holds %d×%d, result.json says %d×%d", name, mr.File, r, c, mr.Rows, mr.Cols)
	}
	return ds.X, nil
}

// Scalar returns the released public scalar name.
func (m *TransformModel) Scalar(name string) (float64, bool) {
	v, ok := m.scalars[name]
	return v, ok
}

// Transformer is one estimator family's transform: it maps new rows x
// through a fitted model. It must use only the model's public outputs: a
// transform is post-processing and is never charged.
type Transformer struct {
	// Family names the estimator family (e.g. "pca").
	Family string
	// Match reports whether an estimator belongs to the family.
	Match func(estimator string) bool
	// Kind is the data kind the transform reads (rows for PCA).
	Kind data.Kind
	// Apply maps x through the model.
	Apply func(m *TransformModel, x *mat.Dense) (*mat.Dense, error)
	// Doc says in a line what the output is.
	Doc string
}

// transformers is the dispatch table of `dplr transform`, one entry per
// estimator family; a family adds its Transformer here.
var transformers = []Transformer{pcaTransformer}

// pcaTransformer projects rows onto the released components: (x − mean)·U,
// with the released private mean when the fit centred (center=private),
// after dividing each column by the released feature_scale when the fit
// scaled the features (feature_scale=private).
// It serves the pca plugin's estimators and orbit's (the same outputs).
var pcaTransformer = Transformer{
	Family: "pca",
	Match: func(e string) bool {
		return strings.HasPrefix(e, "pca-") || strings.HasPrefix(e, "orbit-")
	},
	Kind: data.Rows,
	Doc:  "n×r scores (x/feature_scale − mean)·U on the released components",
	Apply: func(m *TransformModel, x *mat.Dense) (*mat.Dense, error) {
		u, err := m.Matrix("U")
		if err != nil {
			return nil, err
		}
		if u == nil {
			return nil, fmt.Errorf("the model released no components U")
		}
		mean, err := m.Matrix("mean")
		if err != nil {
			return nil, err
		}
		scale, err := m.Matrix("feature_scale")
		if err != nil {
			return nil, err
		}
		if c, ok := m.Params["center"]; ok && fmt.Sprint(c) == "private" && mean == nil {
			return nil, fmt.Errorf("the fit centred with a private mean but released none: refit with this version of dplr")
		}
		n, p := x.Dims()
		up, _ := u.Dims()
		if p != up {
			return nil, fmt.Errorf("the data have %d columns, the model's components %d", p, up)
		}
		if scale != nil { // feature_scale=private: the fit divided every column by its released scale
			if _, sp := scale.Dims(); sp != p {
				return nil, fmt.Errorf("the model's feature_scale has %d entries, the data %d columns", sp, p)
			}
			s := scale.RawRowView(0)
			xs := mat.NewDense(n, p, nil)
			for i := 0; i < n; i++ {
				dst := xs.RawRowView(i)
				for j, v := range x.RawRowView(i)[:p] {
					dst[j] = v / s[j]
				}
			}
			x = xs
		}
		xc := x
		if mean != nil {
			if _, mp := mean.Dims(); mp != p {
				return nil, fmt.Errorf("the model's mean has %d entries, the data %d columns", mp, p)
			}
			xc = mat.NewDense(n, p, nil)
			mu := mean.RawRowView(0)
			for i := 0; i < n; i++ {
				dst := xc.RawRowView(i)
				for j, v := range x.RawRowView(i)[:p] {
					dst[j] = v - mu[j]
				}
			}
		}
		var out mat.Dense
		out.Mul(xc, u)
		return &out, nil
	},
}

// readTransformModel reads result.json from a fit's output directory.
func readTransformModel(dir string) (*TransformModel, error) {
	res, err := regularModelFile(filepath.Join(dir, "result.json"))
	if err != nil {
		return nil, fmt.Errorf("--model %s: %w (give the output directory of a dplr fit)", dir, err)
	}
	b, err := os.ReadFile(res)
	if err != nil {
		return nil, fmt.Errorf("--model %s: %w (give the output directory of a dplr fit)", dir, err)
	}
	var rep FitReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("--model %s: result.json: %w", dir, err)
	}
	m := &TransformModel{Dir: dir, Estimator: rep.Estimator, Params: rep.Params, ColumnScales: rep.Data.ColumnScales,
		matrices: map[string]MatrixReport{}, scalars: map[string]float64{}}
	// A model is its public outputs; a non-private reference fit (run
	// with --non-private, guarantee "none") has only evaluation outputs,
	// and transforming with them is what its user opted into.
	usable := func(release string) bool {
		return release == "public" || (rep.Privacy.Guarantee == "none" && release == "evaluation")
	}
	for _, mr := range rep.Outputs.Matrices {
		if usable(mr.Release) {
			m.matrices[mr.Name] = mr
		}
	}
	for _, s := range rep.Outputs.Scalars {
		if usable(s.Release) {
			m.scalars[s.Name] = s.Value
		}
	}
	return m, nil
}

// transformerFor finds the family serving an estimator.
func transformerFor(estimator string) (Transformer, error) {
	var fams []string
	for _, t := range transformers {
		if t.Match(estimator) {
			return t, nil
		}
		fams = append(fams, t.Family)
	}
	return Transformer{}, fmt.Errorf("estimator %s has no transform (families with one: %s)", estimator, strings.Join(fams, ", "))
}

// cmdTransform is `dplr transform --model RUN_DIR --data FILE --out FILE`:
// post-processing of a released model on new data, no budget involved.
func cmdTransform(ctx context.Context, env *Env, args []string) error {
	if fedrepTransformRequested(args) {
		// A personalization model: each row gets its own user's head.
		return runTransformFedRep(ctx, env, args)
	}
	fs := flag.NewFlagSet("transform", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var df dataFlags
	df.register(fs)
	model := fs.String("model", "", "`RUN_DIR`: the output directory of a dplr fit (its result.json and .npy outputs)")
	out := fs.String("out", "", "`FILE` for the transformed rows: .npy, or .csv")
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, `Usage: dplr transform --model RUN_DIR --data FILE --out FILE [data flags]

Maps new rows through a released model: for PCA estimators, the scores
(x − mean)·U with the released components U and, when the fit used
center=private, the released private mean (with feature_scale=private,
each column is first divided by the released feature_scale). This is post-processing of
public outputs: it spends no budget, writes nothing to the ledger and
works on data that has no budget. The data must be read the same way as
for the fit (same --scale, same columns); the fit's --column-scales are
recorded in the model and applied without the flag.

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
	if *model == "" || *out == "" {
		return usagef("transform: --model and --out are required")
	}
	ext := strings.ToLower(filepath.Ext(*out))
	if ext != ".npy" && ext != ".csv" {
		return usagef("transform: --out %s: give a .npy or .csv file", *out)
	}
	if err := checkTransformOut(*out, *model, df.path, df.labels, df.response, df.users, df.columnScales); err != nil {
		return err
	}
	m, err := readTransformModel(*model)
	if err != nil {
		return fail(ExitUsage, err)
	}
	t, err := transformerFor(m.Estimator)
	if err != nil {
		return fail(ExitUsage, err)
	}
	l, err := df.locate(t.Kind)
	if err != nil {
		return err
	}
	switch {
	case len(l.opt.ColumnScales) == 0:
		l.opt.ColumnScales = m.ColumnScales // the fit's public column scales
	case !slices.Equal(l.opt.ColumnScales, m.ColumnScales):
		return usagef("transform: --column-scales differ from the scales the model was fitted with (%v): omit the flag to use the model's", m.ColumnScales)
	}
	ds, err := dataio.Interruptible(ctx, func() (*data.Dataset, error) { return dataio.Load(l.path, l.opt) })
	if err != nil {
		return fail(ExitData, fmt.Errorf("data: %w", err))
	}
	y, err := t.Apply(m, ds.X)
	if err != nil {
		return fail(ExitData, fmt.Errorf("transform with %s: %w", m.Estimator, err))
	}
	if err := writeMatrix(*out, y); err != nil {
		return fail(ExitError, err)
	}
	r, c := y.Dims()
	fmt.Fprintf(env.Stdout, "transform: %d×%d %s written to %s (post-processing: no budget spent, nothing recorded)\n", r, c, t.Doc, *out)
	return nil
}

// writeMatrix writes m as .npy or .csv by the file's extension.
func writeMatrix(path string, m *mat.Dense) error {
	r, c := m.Dims()
	if strings.ToLower(filepath.Ext(path)) == ".npy" {
		raw := make([]float64, 0, r*c)
		for i := 0; i < r; i++ {
			raw = append(raw, m.RawRowView(i)[:c]...)
		}
		if err := dataio.SaveNPYFloat64(path, []int{r, c}, raw); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	w := bufio.NewWriter(f)
	for i := 0; i < r; i++ {
		for j, v := range m.RawRowView(i)[:c] {
			if j > 0 {
				w.WriteByte(',')
			}
			w.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		}
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// regularModelFile returns path when it is a regular file: a model part
// that is a FIFO, a device or a directory is refused before it is opened
// (opening a FIFO would wait for a writer forever).
func regularModelFile(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("model file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("model file %s is not a regular file (%s)", path, st.Mode().Type())
	}
	return path, nil
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
