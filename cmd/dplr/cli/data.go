package cli

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/dplr/dplr/client"
	"github.com/dplr/dplr/engine/data"
)

// dataFlags are the flags that say how to read a data set.
type dataFlags struct {
	path, format, labels, response, users string
	userCol, responseCol, labelCol, name  string
	header, delimiter, features           string
	maxBytes, columnScales                string
	scale                                 float64
	d1, d2                                int
}

func (df *dataFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&df.path, "data", "", "`PATH` of a data file (CSV, .npy, IDX, gzip or not) or of a directory written by \"dplr gen\"")
	fs.StringVar(&df.format, "format", "", "data format: csv, npy or idx (default: detected from extension and magic bytes)")
	fs.Float64Var(&df.scale, "scale", 0, "multiply every feature by this (e.g. 0.00392156862745098 = 1/255 for 8-bit pixels)")
	fs.StringVar(&df.columnScales, "column-scales", "", "`FILE` of public per-column scales (one CSV line of p positive numbers, or a .npy vector): column j is divided by its scale before anything else, so a table in mixed units is fitted in common units; public knowledge (units, codebook ranges), never computed from the data; recorded in result.json and applied by transform")
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

// loadOptions are the load options the flags describe; --data must name
// something that exists.
func (df *dataFlags) loadOptions() (client.LoadOptions, error) {
	var opt client.LoadOptions
	if df.path == "" {
		return opt, usagef("--data is required")
	}
	if _, err := os.Stat(df.path); err != nil {
		return opt, fail(ExitData, fmt.Errorf("data: %w", err))
	}
	format, err := client.ParseFormat(df.format)
	if err != nil {
		return opt, fail(ExitUsage, err)
	}
	opt = client.LoadOptions{Format: format, Scale: df.scale, D1: df.d1, D2: df.d2,
		LabelsPath: df.labels, ResponsePath: df.response, UsersPath: df.users, UserColumn: df.userCol,
		ResponseColumn: df.responseCol, LabelColumn: df.labelCol, Name: df.name, Header: client.HeaderMode(df.header)}
	if df.delimiter != "" {
		r := []rune(df.delimiter)
		if len(r) != 1 {
			return opt, usagef("--delimiter %q: give one character", df.delimiter)
		}
		opt.Delimiter = r[0]
	}
	if df.features != "" {
		opt.FeatureColumns = strings.Split(df.features, ",")
	}
	if df.columnScales != "" {
		if opt.ColumnScales, err = client.ReadColumnScales(df.columnScales); err != nil {
			return opt, usagef("--column-scales: %v", err)
		}
	}
	if df.maxBytes != "" {
		if opt.MaxBytes, err = client.ParseBytes(df.maxBytes); err != nil {
			return opt, usagef("--max-data-bytes: %v", err)
		}
	}
	if opt.CacheMaxBytes, err = client.CacheMaxBytes(); err != nil {
		return opt, fail(ExitUsage, err)
	}
	return opt, nil
}

// loaded is a data file located and the options it is read with.
type loaded struct {
	path string
	opt  client.LoadOptions
}

// locate resolves --data for an estimator taking kind data (see
// client.Locate).
func (df *dataFlags) locate(kind data.Kind) (*loaded, error) {
	opt, err := df.loadOptions()
	if err != nil {
		return nil, err
	}
	l, err := client.Locate(df.path, opt, kind)
	if err != nil {
		return nil, err // its class gives the exit code
	}
	return &loaded{path: l.Path, opt: l.Options}, nil
}
