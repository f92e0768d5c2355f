package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
)

// Data is the data set of a fit or a budget operation: a file (or a
// directory written by `dplr gen`) read with load options, or a data set
// held in memory. Build it with File, InMemory or Rows.
type Data struct {
	// Path is a data file (CSV, .npy, IDX, gzip or not) or a `dplr gen`
	// directory.
	Path string
	// Load says how to read Path. Its Kind is filled from the estimator
	// when empty (for budget operations: inferred, see InferKind).
	Load LoadOptions
	// Dataset is a data set held in memory (instead of Path). It is not
	// modified.
	Dataset *data.Dataset
	// Prepared is a handle prepared and validated already (instead of
	// Path); see RemoteData.
	Prepared *Handle
	// Remote, with Prepared, is a data set held elsewhere and reached only
	// through aggregation passes (`dplr fit --engine beam` for estimators
	// with Info.Remote): Prepared then carries its kind, source identity,
	// name and shape (no file), Remote its public shape and the Passer the
	// host runs each pass with.
	Remote *data.Remote
}

// RemoteData is a data set held elsewhere: h names its kind, source
// identity (h.Source, h.Hash its hash), name and shape, r its public
// shape and the Passer that runs the aggregation passes an estimator
// requests (see host.FitRequest.Remote).
func RemoteData(h Handle, r *data.Remote) Data { return Data{Prepared: &h, Remote: r} }

// File is the data set read from path with opt.
func File(path string, opt LoadOptions) Data { return Data{Path: path, Load: opt} }

// InMemory is a data set held in memory; it is validated and hashed like
// a file (NaN or Inf is an ErrData error).
func InMemory(ds *data.Dataset) Data { return Data{Dataset: ds} }

// Rows is a rows data set (one observation per row of x) held in memory.
func Rows(x *mat.Dense) Data { return Data{Dataset: &data.Dataset{Kind: data.Rows, X: x}} }

// DatasetManifest is the dataset.json that `dplr gen` writes beside the
// data; a fit given the directory reads it to know which files hold what.
type DatasetManifest struct {
	Model   string             `json:"model"`
	Kind    data.Kind          `json:"kind"`
	Seed    uint64             `json:"seed"`
	Params  map[string]string  `json:"params"`
	N       int                `json:"n"`
	P       int                `json:"p"`
	D1      int                `json:"d1,omitempty"`
	D2      int                `json:"d2,omitempty"`
	Users   int                `json:"users,omitempty"`
	Hash    string             `json:"hash"`
	Files   map[string]string  `json:"files"` // x, y, users, labels → file name
	Truth   map[string]string  `json:"truth"` // truth matrix name → file name
	Scalars map[string]float64 `json:"scalars"`
}

// ManifestName is the file name of a generated data set's manifest.
const ManifestName = "dataset.json"

// ReadManifest reads the manifest of a `dplr gen` directory.
func ReadManifest(dir string) (*DatasetManifest, error) {
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

// Located is a data file found and described, ready to prepare.
type Located struct {
	// Path is the file holding X; Options how to read it.
	Path    string
	Options LoadOptions
	// Truth holds a generated data set's ground truth (nil otherwise).
	Truth map[string]*mat.Dense
	// Manifest is a generated data set's manifest (nil otherwise).
	Manifest *DatasetManifest
}

// Locate resolves path for kind data: a file is read with opt; a `dplr
// gen` directory names its files, its kind (which must be kind) and its
// truth. Errors are ErrData.
func Locate(path string, opt LoadOptions, kind data.Kind) (*Located, error) {
	opt.Kind = kind
	st, err := os.Stat(path)
	if err != nil {
		return nil, classed(ErrData, fmt.Errorf("data: %w", err))
	}
	if !st.IsDir() {
		return &Located{Path: path, Options: opt}, nil
	}
	man, err := ReadManifest(path)
	if err != nil {
		return nil, classed(ErrData, err)
	}
	if man.Kind != kind {
		return nil, classedf(ErrData, "data set %s holds %s data (model %s), not the %s data asked for", path, man.Kind, man.Model, kind)
	}
	in := func(key string) string {
		if f, ok := man.Files[key]; ok {
			return filepath.Join(path, f)
		}
		return ""
	}
	opt.ResponsePath, opt.UsersPath, opt.LabelsPath = in("y"), in("users"), in("labels")
	opt.D1, opt.D2 = man.D1, man.D2
	opt.Name = cmp.Or(opt.Name, man.Model)
	l := &Located{Path: in("x"), Options: opt, Manifest: man, Truth: map[string]*mat.Dense{}}
	for k, f := range man.Truth {
		m, err := dataio.Load(filepath.Join(path, f), dataio.LoadOptions{MaxBytes: opt.MaxBytes})
		if err != nil {
			return nil, classed(ErrData, fmt.Errorf("reading truth %s: %w", k, err))
		}
		l.Truth[k] = m.X
	}
	return l, nil
}

// Prepare validates, hashes and (if needed) converts the data set into
// home's cache, returning the handle a plugin opens. Errors are ErrData,
// or ErrInterrupted when ctx ends.
func (l *Located) Prepare(ctx context.Context, home string) (Handle, error) {
	h, err := dataio.Interruptible(ctx, func() (dataio.Handle, error) {
		return dataio.PrepareFileContext(ctx, l.Path, l.Options, CacheDir(home))
	})
	if err != nil {
		if ctx.Err() != nil {
			return h, classed(ErrInterrupted, ctx.Err())
		}
		return h, classed(ErrData, err)
	}
	return h, nil
}

// InferKind is the data kind a file is read as when none is given (budget
// operations), so that it hashes the data the way the fits that use it
// do: a `dplr gen` directory says its own kind; for a file, user ids mean
// users data, a matrix shape or a response trace data, a CSV header with
// a "user" column users data, anything else rows. why explains an
// inference from a file's options ("" for a directory).
func InferKind(path string, opt LoadOptions) (k data.Kind, why string) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		if man, err := ReadManifest(path); err == nil {
			return man.Kind, ""
		}
	}
	switch {
	case opt.UsersPath != "" || opt.UserColumn != "":
		return data.Users, "user ids were given"
	case opt.D1 > 0 || opt.D2 > 0 || opt.ResponsePath != "":
		return data.Trace, "a matrix shape or a response was given"
	}
	if rec, err := dataio.CSVFirstRecord(path, opt.Delimiter); err == nil && slices.Contains(rec, "user") {
		return data.Users, "its CSV header has a user column"
	}
	return data.Rows, "no user ids, matrix shape or response was given"
}

// prepared is a data set ready for a plugin, with what the fit reports.
type prepared struct {
	handle dataio.Handle
	truth  map[string]*mat.Dense
	remote *data.Remote
}

// prepare makes d ready for an estimator taking kind data.
func (c *Client) prepare(ctx context.Context, d Data, kind data.Kind) (*prepared, error) {
	switch {
	case d.Prepared != nil && (d.Dataset != nil || d.Path != ""):
		return nil, classedf(ErrUsage, "give the data as a path, in memory or prepared, not several")
	case d.Remote != nil && d.Prepared == nil:
		return nil, classedf(ErrUsage, "a remote data set needs its prepared handle (RemoteData)")
	case d.Prepared != nil:
		if d.Remote != nil && d.Prepared.Kind != kind {
			return nil, classedf(ErrUsage, "the estimator takes %s data, the remote data set holds %s data", kind, d.Prepared.Kind)
		}
		return &prepared{handle: *d.Prepared, remote: d.Remote}, nil
	case d.Dataset != nil && d.Path != "":
		return nil, classedf(ErrUsage, "give the data as a path or in memory, not both")
	case d.Dataset != nil:
		return c.prepareMemory(ctx, d.Dataset)
	case d.Path == "":
		return nil, classedf(ErrUsage, "no data given")
	}
	opt := d.Load
	if opt.CacheMaxBytes == 0 {
		v, err := CacheMaxBytes()
		if err != nil {
			return nil, classed(ErrUsage, err)
		}
		opt.CacheMaxBytes = v
	}
	l, err := Locate(d.Path, opt, kind)
	if err != nil {
		return nil, err
	}
	h, err := l.Prepare(ctx, c.opt.Home)
	if err != nil {
		return nil, err
	}
	return &prepared{handle: h, truth: l.Truth}, nil
}

// prepareMemory validates and hashes an in-memory data set into the cache.
func (c *Client) prepareMemory(ctx context.Context, ds *data.Dataset) (*prepared, error) {
	cp := *ds // dataio.Prepare fills in the hash
	if cp.X == nil {
		return nil, classedf(ErrData, "data set has no rows")
	}
	h, err := dataio.Interruptible(ctx, func() (dataio.Handle, error) {
		return dataio.Prepare(&cp, CacheDir(c.opt.Home))
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, classed(ErrInterrupted, ctx.Err())
		}
		return nil, classed(ErrData, fmt.Errorf("data: %w", err))
	}
	return &prepared{handle: h}, nil
}

// CacheMaxEnv is the environment variable bounding the data cache.
const CacheMaxEnv = "DPLR_CACHE_MAX_BYTES"

// CacheMaxBytes is the data cache's bound from $DPLR_CACHE_MAX_BYTES (0
// when unset: the default).
func CacheMaxBytes() (int64, error) {
	s := os.Getenv(CacheMaxEnv)
	if s == "" {
		return 0, nil
	}
	v, err := dataio.ParseBytes(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", CacheMaxEnv, err)
	}
	return v, nil
}

// CacheDir is the data cache of the dplr home home: each data set read,
// converted to raw float64 arrays that plugins map without copying.
func CacheDir(home string) string { return filepath.Join(home, "cache") }

// CacheEntry is a data set kept in the cache.
type CacheEntry = dataio.CacheEntry

// ListCache lists the cache's entries, least recently used first.
func ListCache(home string) ([]CacheEntry, error) { return dataio.CacheList(CacheDir(home)) }

// ClearCache removes every entry of the cache and returns the bytes freed
// (budgets are not affected: the ledger does not live in the cache).
func ClearCache(home string) (int64, error) { return dataio.CacheClear(CacheDir(home)) }

// DefaultCacheMaxBytes is the cache's bound when $DPLR_CACHE_MAX_BYTES is
// unset: the machine's physical memory.
func DefaultCacheMaxBytes() int64 { return dataio.DefaultCacheMaxBytes() }
