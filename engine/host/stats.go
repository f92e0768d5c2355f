package host

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/engine/transport"
)

// maxStatsManifest bounds stats.json (a few numbers and a sketch of at
// most dataio.SketchSize hashes).
const maxStatsManifest = 1 << 20

// npyHeaderSlack bounds a .npy header.
const npyHeaderSlack = 1 << 16

// LoadStatistics reads the statistics a pipeline wrote into dir
// (dataio.StatsManifest and its two .npy files), validates them — format,
// kind, shapes, p within transport.MaxStatsP, the identity's row count
// equal to n, every value finite, the second moment symmetric with a
// non-negative diagonal, the sum and trace within what the clip allows,
// bounded file sizes — and writes the validated values as raw arrays into
// work (a directory the caller owns and removes), returning the handle the
// plugin opens. The handle's Source is the identity derived from the
// pipeline's identity parts, so the ledger charges the same key as for
// the one file holding the same rows. Nothing is reserved here: a refusal
// spends nothing.
func LoadStatistics(dir, work string) (dataio.Handle, error) {
	var h dataio.Handle
	m, err := readStatsManifest(filepath.Join(dir, dataio.StatsManifestName))
	if err != nil {
		return h, err
	}
	sum, err := readStatsArray(dir, m.Sum, "sum", 1, m.P)
	if err != nil {
		return h, err
	}
	mom, err := readStatsArray(dir, m.Moment, "second moment", m.P, m.P)
	if err != nil {
		return h, err
	}
	p := m.P
	for i := 0; i < p; i++ {
		for j := i + 1; j < p; j++ {
			if mom[i*p+j] != mom[j*p+i] {
				return h, fmt.Errorf("statistics: second moment is not symmetric at (%d, %d)", i, j)
			}
		}
	}
	st := &data.Statistics{N: int(m.N), P: p, Clip: m.Clip, Sum: sum, Moment: mat.NewSymDense(p, mom)}
	if err := st.Check(); err != nil {
		return h, err
	}
	id := m.Identity.Identity()
	if err := id.Check(); err != nil {
		return h, fmt.Errorf("statistics: source identity: %w", err)
	}
	sumRef, err := writeRaw(filepath.Join(work, "sum.f8"), sum)
	if err != nil {
		return h, err
	}
	momRef, err := writeRaw(filepath.Join(work, "moment.f8"), mom)
	if err != nil {
		return h, err
	}
	h = dataio.Handle{Version: dataio.HandleVersion, Kind: data.Rows, Hash: statsHash(m, sum, mom), N: int(m.N), P: p,
		Source: &id, Stats: &dataio.StatsRef{Clip: m.Clip, Sum: sumRef, Moment: momRef}}
	return h, nil
}

// readStatsManifest reads and checks stats.json.
func readStatsManifest(path string) (*dataio.StatsManifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("statistics: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStatsManifest+1))
	if err != nil {
		return nil, fmt.Errorf("statistics: %w", err)
	}
	if len(b) > maxStatsManifest {
		return nil, fmt.Errorf("statistics: %s is larger than %d bytes", path, maxStatsManifest)
	}
	var m dataio.StatsManifest
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("statistics: %s: %w", path, err)
	}
	switch {
	case m.Format != dataio.StatsFormat:
		return nil, fmt.Errorf("statistics: format %q, want %q", m.Format, dataio.StatsFormat)
	case m.Kind != data.Rows:
		return nil, fmt.Errorf("statistics of %q data: only rows statistics are supported", m.Kind)
	case m.N < 1 || m.N > math.MaxInt32*int64(1<<16):
		return nil, fmt.Errorf("statistics: row count %d out of range", m.N)
	case m.P < 1 || m.P > transport.MaxStatsP:
		return nil, fmt.Errorf("statistics: p = %d out of range [1, %d]", m.P, transport.MaxStatsP)
	case !(m.Clip >= 0) || math.IsInf(m.Clip, 0):
		return nil, fmt.Errorf("statistics: clip %v is not a non-negative number", m.Clip)
	case m.Identity.Rows != m.N:
		return nil, fmt.Errorf("statistics: the source identity counts %d rows but the statistics %d", m.Identity.Rows, m.N)
	case len(m.Identity.Heap) == 0 || len(m.Identity.Heap) > dataio.SketchSize:
		return nil, fmt.Errorf("statistics: source sketch of %d hashes, want 1 to %d", len(m.Identity.Heap), dataio.SketchSize)
	}
	return &m, nil
}

// readStatsArray reads the rows×cols float64 array in the .npy file name
// (a plain name inside dir), refusing a file larger than such an array.
func readStatsArray(dir, name, what string, rows, cols int) ([]float64, error) {
	if name == "" || name != filepath.Base(name) || strings.HasPrefix(name, ".") {
		return nil, fmt.Errorf("statistics: %s file %q is not a plain file name", what, name)
	}
	path := filepath.Join(dir, name)
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("statistics: %s: %w", what, err)
	}
	want := 8 * int64(rows) * int64(cols)
	if !fi.Mode().IsRegular() || fi.Size() > want+npyHeaderSlack {
		return nil, fmt.Errorf("statistics: %s file %s is not a regular file of a %d×%d array", what, name, rows, cols)
	}
	ds, err := dataio.Load(path, dataio.LoadOptions{Format: dataio.FormatNPY, SkipHash: true, MaxBytes: want + npyHeaderSlack})
	if err != nil {
		return nil, fmt.Errorf("statistics: %s: %w", what, err)
	}
	r, c := ds.X.Dims()
	if r*c == rows*cols && (r == rows || (rows == 1 && c == 1)) {
		return mat.DenseCopyOf(ds.X).RawMatrix().Data, nil
	}
	return nil, fmt.Errorf("statistics: %s is %d×%d, want %d×%d", what, r, c, rows, cols)
}

// writeRaw writes v as little-endian float64 values and returns its
// reference.
func writeRaw(path string, v []float64) (dataio.FileRef, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return dataio.FileRef{}, err
	}
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	if err := os.WriteFile(abs, b, 0o600); err != nil {
		return dataio.FileRef{}, fmt.Errorf("statistics: %w", err)
	}
	return dataio.FileRef{Path: abs, DType: dataio.DTypeFloat64, Count: int64(len(v)), Size: int64(len(b))}, nil
}

// statsHash is the content hash of the statistics (the handle's Hash: the
// view the plugin reads; the budget key is the source identity).
func statsHash(m *dataio.StatsManifest, sum, mom []float64) string {
	hs := sha256.New()
	fmt.Fprintf(hs, "%s\x00n=%d\x00p=%d\x00clip=%x\x00", dataio.StatsFormat, m.N, m.P, math.Float64bits(m.Clip))
	var b [8]byte
	for _, v := range append(append([]float64(nil), sum...), mom...) {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
		hs.Write(b[:])
	}
	return hex.EncodeToString(hs.Sum(nil))
}

// ErrStatistics is wrapped when an estimator without a from-statistics
// path is asked to run on statistics.
var ErrStatistics = errors.New("the estimator needs the rows")

// checkStatistics refuses statistics to an estimator that has no
// from-statistics path (its catalogue entry does not say Statistics).
func checkStatistics(info sdk.Info, h dataio.Handle) error {
	if h.Stats == nil || info.Statistics {
		return nil
	}
	return &FitError{Err: fmt.Errorf("%s has no path from aggregated statistics (the Beam engine computes only those): run it on the data file (--engine local): %w: %w",
		info.Name, ErrStatistics, ErrUsage)}
}
