package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/pass"
)

// BeamPassFormat names the layout of what `dplr-beam describe` prints and
// of the request and result files of `dplr-beam pass`. Version 2 added
// the shards' states (files) to the description, the request and the
// result; each program refuses the other's files of another version.
const BeamPassFormat = "dplr-pass/2"

// BeamExitDataChanged is the exit code of `dplr-beam pass` when a shard
// is not in the state the request records (added, removed, modified,
// replaced, touched): the host refuses the pass with ErrDataChanged.
const BeamExitDataChanged = 3

// Bounds on what the host reads from dplr-beam: its description (a few
// numbers, a sketch of at most dataio.SketchSize hashes and the state of
// each shard: 16 MB holds some 100 000 shards' states), a result manifest
// (names, counts, scalars, the states), and each output (its expected
// shape times 8 bytes plus an .npy header).
const (
	maxBeamDescription = 16 << 20
	maxPassManifest    = 16 << 20
	npyHeaderSlack     = 1 << 16
)

// beamCancelDelay is how long a cancelled dplr-beam may take to stop
// before it is killed.
const beamCancelDelay = 10 * time.Second

// MaxPassRequestBytes bounds a pass request file (JSON; `dplr-beam pass`
// refuses a larger one).
const MaxPassRequestBytes = 1 << 28

// BeamShape is the public shape of a data set in dplr-beam's files.
type BeamShape struct {
	N     int `json:"n"`
	P     int `json:"p"`
	D1    int `json:"d1"`
	D2    int `json:"d2"`
	Users int `json:"users"`
}

// ShapeOfRemote returns the shape of r.
func ShapeOfRemote(r *data.Remote) BeamShape {
	return BeamShape{N: r.N, P: r.P, D1: r.D1, D2: r.D2, Users: r.Users}
}

// Remote returns s as a data.Remote without a Passer.
func (s BeamShape) Remote() *data.Remote {
	return &data.Remote{N: s.N, P: s.P, D1: s.D1, D2: s.D2, Users: s.Users}
}

// BeamDescription is what `dplr-beam describe` prints on stdout (JSON):
// the public shape of the shards read as data of kind Kind, the source
// identity of all their rows (the budget ledger's key, the same as for
// the one file holding them) and, where a state names a shard's content
// (local plain .npy and IDX rows files), the state of each shard it was
// hashed in: BeamSource.
type BeamDescription struct {
	Format string    `json:"format"`
	Kind   data.Kind `json:"kind"`
	BeamShape
	// Shards is the number of files read.
	Shards int `json:"shards"`
	BeamSource
}

// BeamSource is what a description says of the rows, and what each pass
// must show it read: their source identity and, if recorded, the state
// of every shard (sorted by path, one per shard) in which they were read
// and hashed. With Files, a pass reads each shard only in its recorded
// state and reports the states instead of hashing the rows again;
// without, it takes the identity again in its own read.
type BeamSource struct {
	Identity dataio.Identity    `json:"identity,omitzero"`
	Files    []dataio.FileState `json:"files,omitempty"`
}

// checkFiles validates recorded shard states: none, or one trusted state
// per shard, sorted by path without repeats.
func checkFiles(files []dataio.FileState, shards int) error {
	if len(files) == 0 {
		return nil
	}
	if len(files) != shards {
		return fmt.Errorf("%d shard states for %d shards", len(files), shards)
	}
	for i, f := range files {
		if f.Path == "" || !f.Trusted() || f.Size < 0 {
			return fmt.Errorf("shard state %d is not a trusted state of a named file", i)
		}
		if i > 0 && files[i-1].Path >= f.Path {
			return fmt.Errorf("shard states not sorted by path at %d", i)
		}
	}
	return nil
}

// BeamArray is an array in a pass request (values inline) or result
// (values in File, a float64 .npy file of shape Rows×Cols in the result's
// directory).
type BeamArray struct {
	Name string    `json:"name"`
	Rows int       `json:"rows"`
	Cols int       `json:"cols"`
	Data []float64 `json:"data,omitempty"`
	File string    `json:"file,omitempty"`
}

// BeamPassRequest is the request file of `dplr-beam pass` (JSON): a
// data.PassRequest (already validated by the host), the shape it was
// validated against and the shards' states the description recorded, if
// any (the pass then reads the shards only in those states).
type BeamPassRequest struct {
	Format string             `json:"format"`
	Kind   data.Kind          `json:"kind"`
	Shape  BeamShape          `json:"shape"`
	Pass   string             `json:"pass"`
	Params map[string]float64 `json:"params"`
	Inputs []BeamArray        `json:"inputs"`
	Files  []dataio.FileState `json:"files,omitempty"`
}

// PassResultName is the result manifest's name in the output directory of
// `dplr-beam pass`; it is written last.
const PassResultName = "result.json"

// BeamPassResult is result.json, written by `dplr-beam pass` beside one
// .npy file per output: the pass's result, the shape of the data it read
// and what it read them as: the source identity taken in the pass's own
// read, or, when the request recorded the shards' states, those states,
// in which every shard was found before and after each of its reads (so
// that data changed before or during the pass is seen).
type BeamPassResult struct {
	Format  string             `json:"format"`
	Pass    string             `json:"pass"`
	Records int64              `json:"records"`
	Outputs []BeamArray        `json:"outputs"`
	Scalars map[string]float64 `json:"scalars"`
	Shape   BeamShape          `json:"shape"`
	BeamSource
}

// ErrDataChanged is wrapped when a pass read data other than those
// described before the fit (another source identity or shape).
var ErrDataChanged = errors.New("the data changed between passes")

// BeamData locates a data set that only a Beam pipeline reads (dplr fit
// --engine beam): dplr-beam's path, the shards' glob, the runner and its
// flags, how shards are read, the data kind (and the trace sample shape,
// 0 when the files give it), where progress goes and a work directory the
// caller owns (pass requests and results, and each dplr-beam run's
// temporary files, are written below it).
//
// How shards are read is dplr-beam's shard-reading flags, with the
// meaning dplr fit gives them on one file: Format forces the shards'
// format (npy, csv, idx or parquet; "" detects it); Header says whether a
// CSV shard's first record is a header (auto, yes or no; "" is auto);
// Scale multiplies every feature after the source identity is taken (0
// means 1); Features names the feature columns in order (CSV header names
// or 0-based indexes, or Parquet column names; nil: every numeric column
// but the user and response columns), or FeatureList the one list column
// of Parquet shards holding a row's features; UserColumn (users data) and
// ResponseColumn (trace and users data) name those columns ("": dplr
// fit's defaults, "user", and "y" else the last column).
type BeamData struct {
	Binary, Data, Runner       string
	BeamFlags                  []string
	Format, Header             string
	Scale                      float64
	Features                   []string
	FeatureList                string
	UserColumn, ResponseColumn string
	Kind                       data.Kind
	D1, D2                     int
	Stderr                     io.Writer
	Work                       string
}

// readArgs returns the dplr-beam shard-reading flags that say the given
// options (see BeamData), in the order of its usage text; empty options
// are left out.
func readArgs(format, header string, scale float64, features []string, list, user, response string) []string {
	var args []string
	for _, f := range []struct{ name, v string }{{"--format", format}, {"--header", header},
		{"--features", strings.Join(features, ",")}, {"--feature-list", list},
		{"--user-column", user}, {"--response-column", response}} {
		if f.v != "" {
			args = append(args, f.name, f.v)
		}
	}
	if scale != 0 {
		args = append(args, "--scale", strconv.FormatFloat(scale, 'g', -1, 64))
	}
	return args
}

// args returns dplr-beam's arguments for subcommand cmd.
func (b BeamData) args(cmd string, extra ...string) []string {
	args := []string{cmd, "--data", b.Data, "--kind", string(b.Kind)}
	if b.D1 > 0 {
		args = append(args, "--d1", strconv.Itoa(b.D1))
	}
	if b.D2 > 0 {
		args = append(args, "--d2", strconv.Itoa(b.D2))
	}
	if b.Runner != "" {
		args = append(args, "--runner", b.Runner)
	}
	args = append(args, readArgs(b.Format, b.Header, b.Scale, b.Features, b.FeatureList, b.UserColumn, b.ResponseColumn)...)
	args = append(args, extra...)
	return append(args, b.BeamFlags...)
}

// beamTemp makes a fresh directory below work (the system's temporary
// directory when work is empty) for one dplr-beam run's temporary files:
// the run gets it as TMPDIR, so that what Beam leaves there (prism's
// empty loopback worker file, shard copies, its aggregate) is removed with
// the directory by the returned cleanup, even after a killed run.
func beamTemp(work string) (string, func(), error) {
	dir, err := os.MkdirTemp(work, "tmp-")
	if err != nil {
		return "", func() {}, fmt.Errorf("dplr-beam's temporary directory: %w", err)
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// withTemp sets cmd's environment to this process's with TMPDIR (and TMP,
// TEMP) set to dir.
func withTemp(cmd *exec.Cmd, dir string) {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return k == "TMPDIR" || k == "TMP" || k == "TEMP"
	})
	cmd.Env = append(env, "TMPDIR="+dir, "TMP="+dir, "TEMP="+dir)
}

// run runs dplr-beam with args, progress to b.Stderr and stdout to
// stdout (b.Stderr when nil), its temporary files in a directory below
// b.Work removed afterwards. Its error wraps ErrPipeline; dplr-beam's
// messages (which may name a shard's row) go to b.Stderr only.
func (b BeamData) run(ctx context.Context, what string, args []string, stdout io.Writer) error {
	stderr := b.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	if stdout == nil {
		stdout = stderr
	}
	tmp, cleanup, err := beamTemp(b.Work)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrPipeline, what, err)
	}
	defer cleanup()
	cmd := exec.CommandContext(ctx, b.Binary, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	withTemp(cmd, tmp)
	// Cancelled: interrupt dplr-beam (it stops its pipeline and removes
	// its temporary files), kill it if it has not exited after a while.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = beamCancelDelay
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %s: %w", ErrPipeline, what, ctx.Err())
		}
		return fmt.Errorf("%w: %s: %s: %w (its messages are on stderr)", ErrPipeline, what, filepath.Base(b.Binary), err)
	}
	return nil
}

// boundedBuffer keeps at most max bytes and notes an overflow (not an
// embedded bytes.Buffer, whose ReadFrom io.Copy would use unbounded).
type boundedBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (w *boundedBuffer) Write(p []byte) (int, error) {
	if room := w.max - w.buf.Len(); len(p) > room {
		w.over = true
		if room > 0 {
			w.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return w.buf.Write(p)
}

// decodeStrict decodes one JSON value from b into v, refusing unknown
// fields and trailing data.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}

// DescribeBeam runs `dplr-beam describe` over b's shards: a pipeline that
// reads every row and returns the data set's public shape and its source
// (identity, and the shards' states where recorded), which it validates
// (format, kind, shape, bounded size, the identity's form and row count,
// one trusted state per shard). The caller runs it before anything is
// reserved, so that a failure spends nothing. The returned Remote has no
// Passer (b.Passer makes one).
func DescribeBeam(ctx context.Context, b BeamData) (*data.Remote, BeamSource, error) {
	var id BeamSource
	out := &boundedBuffer{max: maxBeamDescription}
	if err := b.run(ctx, "describe", b.args("describe"), out); err != nil {
		return nil, id, err
	}
	if out.over {
		return nil, id, fmt.Errorf("%w: describe printed more than %d bytes", ErrPipeline, maxBeamDescription)
	}
	var d BeamDescription
	if err := decodeStrict(out.buf.Bytes(), &d); err != nil {
		return nil, id, fmt.Errorf("%w: describe's output: %w", ErrPipeline, err)
	}
	if err := d.check(b); err != nil {
		return nil, id, fmt.Errorf("%w: describe's output: %w", ErrPipeline, err)
	}
	return d.Remote(), d.BeamSource, nil
}

// check validates a description for the data b names.
func (d *BeamDescription) check(b BeamData) error {
	if d.Format != BeamPassFormat {
		return fmt.Errorf("format %q, want %q", d.Format, BeamPassFormat)
	}
	if d.Kind != b.Kind {
		return fmt.Errorf("%s data described, %s asked for", d.Kind, b.Kind)
	}
	if err := d.BeamShape.check(b.Kind); err != nil {
		return err
	}
	if (b.D1 > 0 && d.D1 != b.D1) || (b.D2 > 0 && d.D2 != b.D2) {
		return fmt.Errorf("samples of %d×%d described, %d×%d asked for", d.D1, d.D2, b.D1, b.D2)
	}
	if d.Shards < 1 {
		return fmt.Errorf("%d shards", d.Shards)
	}
	if err := checkFiles(d.Files, d.Shards); err != nil {
		return err
	}
	return checkIdentity(d.Identity, d.N)
}

// checkIdentity validates a source identity of n rows.
func checkIdentity(id dataio.Identity, n int) error {
	if err := id.Check(); err != nil {
		return fmt.Errorf("source identity: %w", err)
	}
	if id.Rows != int64(n) {
		return fmt.Errorf("the source identity counts %d rows, the data %d", id.Rows, n)
	}
	return nil
}

// check validates a shape for data of kind k.
func (s BeamShape) check(k data.Kind) error {
	const maxN = math.MaxInt32 * (1 << 16)
	switch {
	case s.N < 1 || int64(s.N) > maxN:
		return fmt.Errorf("row count %d out of range", s.N)
	case s.P < 1 || s.P > math.MaxInt32:
		return fmt.Errorf("p = %d out of range", s.P)
	case s.D1 < 0 || s.D2 < 0 || s.Users < 0:
		return fmt.Errorf("negative shape %+v", s)
	}
	switch k {
	case data.Rows:
		if s.D1 != 0 || s.D2 != 0 || s.Users != 0 {
			return fmt.Errorf("rows data with d1, d2, users = %d, %d, %d", s.D1, s.D2, s.Users)
		}
	case data.Trace:
		if s.D1 < 1 || s.D2 < 1 || int64(s.D1)*int64(s.D2) != int64(s.P) {
			return fmt.Errorf("trace data: p = %d is not d1·d2 = %d·%d", s.P, s.D1, s.D2)
		}
		if s.Users != 0 {
			return fmt.Errorf("trace data with %d users", s.Users)
		}
	case data.Users:
		if s.Users < 1 || s.Users > s.N {
			return fmt.Errorf("user data: %d users for %d rows", s.Users, s.N)
		}
		if s.D1 != 0 || s.D2 != 0 {
			return fmt.Errorf("user data with d1, d2 = %d, %d", s.D1, s.D2)
		}
	default:
		return fmt.Errorf("unknown data kind %q", k)
	}
	return nil
}

// beamPasser runs passes with dplr-beam.
type beamPasser struct {
	b   BeamData
	sh  data.Remote
	src BeamSource
}

// Passer returns the data.Passer that runs each pass with `dplr-beam
// pass` over b's shards, for the data set DescribeBeam described as sh
// with source src. Each Pass validates the request (pass.Validate), runs
// the pipeline (progress on b.Stderr; ctx cancels it) with the shards'
// recorded states if src has them, and validates what it returns: bounded
// file sizes, the outputs' shapes from the kind's Spec, finite values,
// the kind's bounds (pass.CheckResult), and the shape and source of the
// data the pipeline read, which must equal sh and src (the identity, or
// the states); else, or when dplr-beam, given the states, found a shard
// added, removed or in another state (exit BeamExitDataChanged), the
// error wraps ErrDataChanged.
func (b BeamData) Passer(sh *data.Remote, src BeamSource) data.Passer {
	p := &beamPasser{b: b, src: src}
	if sh != nil {
		p.sh = *sh
		p.sh.Passer = nil
	}
	return p
}

// Pass implements data.Passer.
func (p *beamPasser) Pass(ctx context.Context, req data.PassRequest) (*data.PassResult, error) {
	sh := &p.sh
	spec, err := pass.Validate(p.b.Kind, sh, req)
	if err != nil {
		return nil, err
	}
	if err := ShapeOfRemote(sh).check(p.b.Kind); err != nil {
		return nil, fmt.Errorf("pass %s: %w", req.Kind, err)
	}
	if err := checkIdentity(p.src.Identity, sh.N); err != nil {
		return nil, fmt.Errorf("pass %s: %w", req.Kind, err)
	}
	if p.b.Work == "" {
		return nil, fmt.Errorf("pass %s: no work directory", req.Kind)
	}
	dir, err := os.MkdirTemp(p.b.Work, "pass-*")
	if err != nil {
		return nil, fmt.Errorf("pass %s: %w", req.Kind, err)
	}
	defer os.RemoveAll(dir)
	reqPath := filepath.Join(dir, "request.json")
	if err := writePassRequest(reqPath, p.b.Kind, sh, req, p.src.Files); err != nil {
		return nil, fmt.Errorf("pass %s: %w", req.Kind, err)
	}
	out := filepath.Join(dir, "out")
	if err := p.b.run(ctx, "pass "+req.Kind, p.b.args("pass", "--request", reqPath, "--out", out), nil); err != nil {
		var exit *exec.ExitError
		if len(p.src.Files) > 0 && ctx.Err() == nil && errors.As(err, &exit) && exit.ExitCode() == BeamExitDataChanged {
			return nil, fmt.Errorf("pass %s: %w (dplr-beam names the shard on stderr)", req.Kind, ErrDataChanged)
		}
		return nil, err
	}
	res, err := readPassResult(out, spec, sh, req, p.src)
	if err != nil {
		if errors.Is(err, ErrDataChanged) {
			return nil, fmt.Errorf("pass %s: %w", req.Kind, err)
		}
		return nil, fmt.Errorf("%w: pass %s: %w", ErrPipeline, req.Kind, err)
	}
	return res, nil
}

// writePassRequest writes the request file.
func writePassRequest(path string, k data.Kind, sh *data.Remote, req data.PassRequest, files []dataio.FileState) error {
	r := BeamPassRequest{Format: BeamPassFormat, Kind: k, Shape: ShapeOfRemote(sh), Pass: req.Kind, Params: req.Params, Files: files}
	if r.Params == nil {
		r.Params = map[string]float64{}
	}
	r.Inputs = []BeamArray{}
	for _, a := range req.Inputs {
		r.Inputs = append(r.Inputs, BeamArray{Name: a.Name, Rows: a.Rows, Cols: a.Cols, Data: a.Data})
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if len(b) > MaxPassRequestBytes {
		return fmt.Errorf("request of %d bytes: above %d", len(b), MaxPassRequestBytes)
	}
	return os.WriteFile(path, b, 0o600)
}

// ReadPassRequest reads and checks a request file written by the host
// (dplr-beam pass calls it): bounded size, known fields only, array
// shapes, the shards' states if any (one trusted state per shard, sorted
// by path). It returns the data kind, the shape, the request and the
// states; the caller validates the request against its kind
// (stats.RunPass does).
func ReadPassRequest(path string) (data.Kind, *data.Remote, data.PassRequest, []dataio.FileState, error) {
	var req data.PassRequest
	b, err := readBounded(path, MaxPassRequestBytes)
	if err != nil {
		return "", nil, req, nil, err
	}
	var r BeamPassRequest
	if err := decodeStrict(b, &r); err != nil {
		return "", nil, req, nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Format != BeamPassFormat {
		return "", nil, req, nil, fmt.Errorf("%s: format %q, want %q", path, r.Format, BeamPassFormat)
	}
	if err := r.Shape.check(r.Kind); err != nil {
		return "", nil, req, nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := checkFiles(r.Files, len(r.Files)); err != nil {
		return "", nil, req, nil, fmt.Errorf("%s: %w", path, err)
	}
	req = data.PassRequest{Kind: r.Pass, Params: r.Params}
	for _, a := range r.Inputs {
		if a.File != "" {
			return "", nil, req, nil, fmt.Errorf("%s: input %q: values must be inline", path, a.Name)
		}
		arr := data.Array{Name: a.Name, Rows: a.Rows, Cols: a.Cols, Data: a.Data}
		if arr.Data == nil {
			arr.Data = []float64{}
		}
		if err := arr.Check(); err != nil {
			return "", nil, req, nil, fmt.Errorf("%s: %w", path, err)
		}
		req.Inputs = append(req.Inputs, arr)
	}
	return r.Kind, r.Shape.Remote(), req, r.Files, nil
}

// WritePassResult writes the result of pass kind into dir (dplr-beam pass
// calls it): one .npy file per output, then result.json with the shape
// and source of the data read (the identity taken in the pass's read, or
// the shards' states it found them in).
func WritePassResult(dir, kind string, res *data.PassResult, sh *data.Remote, src BeamSource) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	m := BeamPassResult{Format: BeamPassFormat, Pass: kind, Records: res.Records, Scalars: res.Scalars, Shape: ShapeOfRemote(sh), BeamSource: src,
		Outputs: []BeamArray{}}
	if m.Scalars == nil {
		m.Scalars = map[string]float64{}
	}
	for i, a := range res.Outputs {
		if err := a.Check(); err != nil {
			return err
		}
		o := BeamArray{Name: a.Name, Rows: a.Rows, Cols: a.Cols}
		if len(a.Data) > 0 {
			o.File = fmt.Sprintf("output-%d.npy", i)
			if err := dataio.SaveNPYFloat64(filepath.Join(dir, o.File), []int{a.Rows, a.Cols}, a.Data); err != nil {
				return err
			}
		}
		m.Outputs = append(m.Outputs, o)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+PassResultName+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, PassResultName))
}

// readBounded reads the regular file at path, refusing one above max
// bytes.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", filepath.Base(path), max)
	}
	return b, nil
}

// readPassResult reads and validates the result dplr-beam wrote into dir
// for req over the data set of shape sh and source src.
func readPassResult(dir string, spec pass.Spec, sh *data.Remote, req data.PassRequest, src BeamSource) (*data.PassResult, error) {
	b, err := readBounded(filepath.Join(dir, PassResultName), maxPassManifest)
	if err != nil {
		return nil, fmt.Errorf("result: %w", err)
	}
	var m BeamPassResult
	if err := decodeStrict(b, &m); err != nil {
		return nil, fmt.Errorf("result: %w", err)
	}
	if m.Format != BeamPassFormat {
		return nil, fmt.Errorf("result: format %q, want %q", m.Format, BeamPassFormat)
	}
	if m.Pass != req.Kind {
		return nil, fmt.Errorf("result of pass %q, %q asked for", m.Pass, req.Kind)
	}
	if m.Shape != ShapeOfRemote(sh) {
		return nil, ErrDataChanged
	}
	if len(src.Files) > 0 {
		// The states the request recorded, in which every shard was
		// read; no identity (the rows were not hashed again).
		if m.Identity.Hash != "" || m.Identity.Rows != 0 || len(m.Identity.Sketch) > 0 || !slices.Equal(m.Files, src.Files) {
			return nil, ErrDataChanged
		}
	} else {
		if len(m.Files) > 0 {
			return nil, errors.New("result: shard states for a pass that recorded none")
		}
		if err := m.Identity.Check(); err != nil {
			return nil, fmt.Errorf("result: source identity: %w", err)
		}
		id := src.Identity
		if m.Identity.Hash != id.Hash || m.Identity.Rows != id.Rows || !slices.Equal(m.Identity.Sketch, id.Sketch) {
			return nil, ErrDataChanged
		}
	}
	want := spec.Outputs(sh, req)
	if len(m.Outputs) != len(want) {
		return nil, fmt.Errorf("result: %d outputs, want %d", len(m.Outputs), len(want))
	}
	res := &data.PassResult{Records: m.Records, Scalars: m.Scalars}
	for i, w := range want {
		o := m.Outputs[i]
		if o.Name != w.Name || o.Rows != w.Rows || o.Cols != w.Cols || o.Data != nil {
			return nil, fmt.Errorf("result: output %d is %q (%d×%d), want %q (%d×%d) in a file", i, o.Name, o.Rows, o.Cols, w.Name, w.Rows, w.Cols)
		}
		v, err := readOutput(dir, o)
		if err != nil {
			return nil, fmt.Errorf("result: output %s: %w", o.Name, err)
		}
		res.Outputs = append(res.Outputs, data.Array{Name: o.Name, Rows: o.Rows, Cols: o.Cols, Data: v})
	}
	if len(res.Scalars) == 0 {
		res.Scalars = nil
	}
	if err := pass.CheckResult(spec, sh, req, res); err != nil {
		return nil, err
	}
	return res, nil
}

// readOutput reads one output's .npy file (a plain name in dir, a regular
// file no larger than its expected shape allows, exactly that shape).
func readOutput(dir string, o BeamArray) ([]float64, error) {
	if o.Rows*o.Cols == 0 {
		if o.File != "" {
			return nil, errors.New("a file for an empty array")
		}
		return []float64{}, nil
	}
	if o.File == "" || o.File != filepath.Base(o.File) || strings.HasPrefix(o.File, ".") {
		return nil, fmt.Errorf("file %q is not a plain file name", o.File)
	}
	path := filepath.Join(dir, o.File)
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	want := 8 * int64(o.Rows) * int64(o.Cols)
	if !fi.Mode().IsRegular() || fi.Size() > want+npyHeaderSlack {
		return nil, fmt.Errorf("%s is not a regular file of a %d×%d array", o.File, o.Rows, o.Cols)
	}
	ds, err := dataio.Load(path, dataio.LoadOptions{Format: dataio.FormatNPY, SkipHash: true, MaxBytes: want + npyHeaderSlack})
	if err != nil {
		return nil, err
	}
	r, c := ds.X.Dims()
	if r != o.Rows || c != o.Cols {
		return nil, fmt.Errorf("%s is %d×%d, want %d×%d", o.File, r, c, o.Rows, o.Cols)
	}
	return mat.DenseCopyOf(ds.X).RawMatrix().Data, nil
}
