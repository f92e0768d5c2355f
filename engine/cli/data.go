package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
)

// dataFlags are the flags that say how to read a data set.
type dataFlags struct {
	path, format, labels, response, users string
	userCol, responseCol, labelCol, name  string
	header, delimiter, features           string
	maxBytes                              string
	scale                                 float64
	d1, d2                                int
}

func (df *dataFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&df.path, "data", "", "`PATH` of a data file (CSV, .npy, IDX, gzip or not) or of a directory written by \"dplr gen\"")
	fs.StringVar(&df.format, "format", "", "data format: csv, npy or idx (default: detected from extension and magic bytes)")
	fs.Float64Var(&df.scale, "scale", 0, "multiply every feature by this (e.g. 0.00392156862745098 = 1/255 for 8-bit pixels)")
	fs.StringVar(&df.labels, "labels", "", "optional `FILE` of integer class labels (IDX, .npy or CSV)")
	fs.StringVar(&df.response, "response", "", "`FILE` of responses y for trace/users data read from arrays")
	fs.StringVar(&df.users, "users", "", "`FILE` of integer user ids for users data read from arrays")
	fs.IntVar(&df.d1, "d1", 0, "rows of each trace-regression sample matrix (CSV or 2-D input)")
	fs.IntVar(&df.d2, "d2", 0, "columns of each trace-regression sample matrix")
	fs.StringVar(&df.userCol, "user-column", "", "CSV column of user ids (name or 0-based index); required for users data from CSV unless the header has a column named \"user\"")
	fs.StringVar(&df.responseCol, "response-column", "", "CSV column of responses (default \"y\", else the last)")
	fs.StringVar(&df.labelCol, "label-column", "", "CSV column of integer labels to keep out of the features")
	fs.StringVar(&df.name, "name", "", "a human name for the data set (recorded in the ledger)")
	fs.StringVar(&df.header, "header", "", "CSV: whether the first record is a header: yes, no (default: detected)")
	fs.StringVar(&df.delimiter, "delimiter", "", "CSV: field separator, one character (default ',' or tab for .tsv)")
	fs.StringVar(&df.features, "features", "", "CSV: comma-separated feature columns (names or 0-based indexes) forming X, in order")
	fs.StringVar(&df.maxBytes, "max-data-bytes", "", "refuse data that would take more memory than this when loaded, e.g. 2G (default: half of physical memory)")
}

// loaded is a data set located and described, ready to prepare.
type loaded struct {
	path  string
	opt   dataio.LoadOptions
	truth map[string]*mat.Dense // from a generated directory; nil otherwise
	man   *DatasetManifest
}

// locate resolves --data for an estimator taking kind data.
func (df *dataFlags) locate(kind data.Kind) (*loaded, error) {
	if df.path == "" {
		return nil, usagef("--data is required")
	}
	st, err := os.Stat(df.path)
	if err != nil {
		return nil, fail(ExitData, fmt.Errorf("data: %w", err))
	}
	format, err := dataio.ParseFormat(df.format)
	if err != nil {
		return nil, fail(ExitUsage, err)
	}
	opt := dataio.LoadOptions{Kind: kind, Format: format, Scale: df.scale, D1: df.d1, D2: df.d2,
		LabelsPath: df.labels, ResponsePath: df.response, UsersPath: df.users, UserColumn: df.userCol,
		ResponseColumn: df.responseCol, LabelColumn: df.labelCol, Name: df.name, Header: dataio.HeaderMode(df.header)}
	if df.delimiter != "" {
		r := []rune(df.delimiter)
		if len(r) != 1 {
			return nil, usagef("--delimiter %q: give one character", df.delimiter)
		}
		opt.Delimiter = r[0]
	}
	if df.features != "" {
		opt.FeatureColumns = strings.Split(df.features, ",")
	}
	if df.maxBytes != "" {
		if opt.MaxBytes, err = dataio.ParseBytes(df.maxBytes); err != nil {
			return nil, usagef("--max-data-bytes: %v", err)
		}
	}
	if opt.CacheMaxBytes, err = cacheMaxBytes(); err != nil {
		return nil, fail(ExitUsage, err)
	}
	if !st.IsDir() {
		return &loaded{path: df.path, opt: opt}, nil
	}
	man, err := readManifest(df.path)
	if err != nil {
		return nil, fail(ExitData, err)
	}
	if man.Kind != kind {
		return nil, fail(ExitData, fmt.Errorf("data set %s holds %s data (model %s), not the %s data asked for", df.path, man.Kind, man.Model, kind))
	}
	in := func(key string) string {
		if f, ok := man.Files[key]; ok {
			return filepath.Join(df.path, f)
		}
		return ""
	}
	opt.ResponsePath, opt.UsersPath, opt.LabelsPath = in("y"), in("users"), in("labels")
	opt.D1, opt.D2 = man.D1, man.D2
	if opt.Name == "" {
		opt.Name = man.Model
	}
	l := &loaded{path: in("x"), opt: opt, man: man, truth: map[string]*mat.Dense{}}
	for k, f := range man.Truth {
		m, err := dataio.Load(filepath.Join(df.path, f), dataio.LoadOptions{MaxBytes: opt.MaxBytes})
		if err != nil {
			return nil, fail(ExitData, fmt.Errorf("reading truth %s: %w", k, err))
		}
		l.truth[k] = m.X
	}
	return l, nil
}

func readManifest(dir string) (*DatasetManifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s is a directory without %s (pass a data file, or a directory written by `dplr gen`)", dir, ManifestName)
	}
	if err != nil {
		return nil, err
	}
	var m DatasetManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestName), err)
	}
	if m.Files["x"] == "" {
		return nil, fmt.Errorf("%s names no data file", filepath.Join(dir, ManifestName))
	}
	return &m, nil
}

// prepare validates, hashes and (if needed) converts the data set into the
// cache, returning the handle a plugin opens. The handle's Source is the
// identity of the source records (the budget's key) and its View the
// loading choices; its Hash is the content hash of the view.
func (l *loaded) prepare(ctx context.Context, home string) (dataio.Handle, error) {
	h, err := dataio.Interruptible(ctx, func() (dataio.Handle, error) {
		return dataio.PrepareFileContext(ctx, l.path, l.opt, filepath.Join(home, "cache"))
	})
	if err != nil {
		if ctx.Err() != nil {
			return h, ctx.Err()
		}
		return h, fail(ExitData, err)
	}
	return h, nil
}
