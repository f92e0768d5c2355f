package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/pass"
)

// fakeBeam writes a stand-in for dplr-beam: describe prints
// $FAKE_DIR/describe.json; pass copies $FAKE_DIR/out into --out and keeps
// the request; both exit with $FAKE_EXIT (default 0). Like Beam's prism
// runner, each run leaves a file in $TMPDIR; it appends its arguments to
// $FAKE_DIR/args and its $TMPDIR to $FAKE_DIR/tmpdirs, one run a line.
func fakeBeam(t *testing.T) (bin, dir string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("shell script")
	}
	dir = t.TempDir()
	bin = filepath.Join(dir, "dplr-beam")
	script := `#!/bin/sh
echo "$*" >> "$FAKE_DIR/args"
echo "$TMPDIR" >> "$FAKE_DIR/tmpdirs"
: > "$TMPDIR/beamloopbackworker-$$"
cmd=$1; shift
out=""; req=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift;;
    --request) req=$2; shift;;
  esac
  shift
done
echo "fake progress" >&2
if [ -n "$FAKE_SLEEP" ]; then exec sleep "$FAKE_SLEEP"; fi
case $cmd in
  describe) cat "$FAKE_DIR/describe.json";;
  pass) cp "$req" "$FAKE_DIR/request.json"; mkdir -p "$out" && cp -R "$FAKE_DIR/out/." "$out/";;
esac
exit ${FAKE_EXIT:-0}
`
	require.NoError(t, os.WriteFile(bin, []byte(script), 0o755))
	t.Setenv("FAKE_DIR", dir)
	return bin, dir
}

// smallRows returns a small rows data set.
func smallRows(n, p int) *data.Dataset {
	r := rand.New(rand.NewPCG(8, 9))
	x := mat.NewDense(n, p, nil)
	for i := range n {
		for j := range p {
			x.Set(i, j, r.NormFloat64())
		}
	}
	return &data.Dataset{Kind: data.Rows, X: x}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

// TestDescribeBeam: a valid description is returned; every malformed or
// inconsistent one is refused with ErrPipeline.
func TestDescribeBeam(t *testing.T) {
	bin, dir := fakeBeam(t)
	ds := smallRows(30, 3)
	id := dataio.IdentityOf(ds)
	good := BeamDescription{Format: BeamPassFormat, Kind: data.Rows, BeamShape: BeamShape{N: 30, P: 3}, Shards: 2, BeamSource: BeamSource{Identity: id}}
	var progress bytes.Buffer
	b := BeamData{Binary: bin, Data: "x/*.npy", Kind: data.Rows, Stderr: &progress, Work: t.TempDir()}
	writeJSON(t, filepath.Join(dir, "describe.json"), good)
	sh, gotID, err := DescribeBeam(context.Background(), b)
	require.NoError(t, err)
	assert.Equal(t, &data.Remote{N: 30, P: 3}, sh)
	assert.Equal(t, id, gotID.Identity)
	assert.Contains(t, progress.String(), "fake progress")

	for name, tc := range map[string]struct {
		edit func(d *BeamDescription)
		raw  string
		want string
	}{
		"garbage":       {raw: "not json", want: "invalid character"},
		"trailing":      {raw: `{"format":"dplr-pass/1"} {}`, want: "after the JSON"},
		"unknown field": {raw: `{"format":"dplr-pass/1","extra":1}`, want: "unknown field"},
		"oversized":     {raw: strings.Repeat(" ", maxBeamDescription+1), want: "more than"},
		"format":        {edit: func(d *BeamDescription) { d.Format = "x" }, want: "format"},
		"kind":          {edit: func(d *BeamDescription) { d.Kind = data.Users; d.Users = 3 }, want: "users data described"},
		"n":             {edit: func(d *BeamDescription) { d.N = 0 }, want: "row count"},
		"rows with d1":  {edit: func(d *BeamDescription) { d.D1 = 1 }, want: "rows data with"},
		"identity rows": {edit: func(d *BeamDescription) { d.N = 31 }, want: "counts 30 rows"},
		"identity hash": {edit: func(d *BeamDescription) { d.Identity.Hash = "zz" }, want: "not a hex"},
		"no shards":     {edit: func(d *BeamDescription) { d.Shards = 0 }, want: "shards"},
		"states count":  {edit: func(d *BeamDescription) { d.Files = testStates("a.npy") }, want: "1 shard states for 2 shards"},
		"state untrusted": {edit: func(d *BeamDescription) {
			d.Files = testStates("a.npy", "b.npy")
			d.Files[1].Stamp = ""
		}, want: "not a trusted state"},
		"states unsorted": {edit: func(d *BeamDescription) { d.Files = testStates("b.npy", "a.npy") }, want: "not sorted"},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.raw != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "describe.json"), []byte(tc.raw), 0o644))
			} else {
				d := good
				d.Identity.Sketch = append([]uint64(nil), id.Sketch...)
				tc.edit(&d)
				writeJSON(t, filepath.Join(dir, "describe.json"), d)
			}
			_, _, err := DescribeBeam(context.Background(), b)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrPipeline)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	t.Run("exit status", func(t *testing.T) {
		t.Setenv("FAKE_EXIT", "1")
		_, _, err := DescribeBeam(context.Background(), b)
		assert.ErrorIs(t, err, ErrPipeline)
		assert.Contains(t, err.Error(), "exit status 1")
	})
	t.Run("users and trace shapes", func(t *testing.T) {
		for _, c := range []struct {
			kind data.Kind
			sh   BeamShape
			ok   bool
		}{
			{data.Users, BeamShape{N: 30, P: 3, Users: 4}, true},
			{data.Users, BeamShape{N: 30, P: 3, Users: 31}, false},
			{data.Users, BeamShape{N: 30, P: 3}, false},
			{data.Trace, BeamShape{N: 30, P: 6, D1: 2, D2: 3}, true},
			{data.Trace, BeamShape{N: 30, P: 6, D1: 2, D2: 2}, false},
		} {
			d := good
			d.Kind, d.BeamShape = c.kind, c.sh
			writeJSON(t, filepath.Join(dir, "describe.json"), d)
			bk := b
			bk.Kind = c.kind
			sh, _, err := DescribeBeam(context.Background(), bk)
			if c.ok {
				require.NoError(t, err, c)
				assert.Equal(t, c.sh.Remote(), sh)
			} else {
				assert.ErrorIs(t, err, ErrPipeline, c)
			}
		}
	})
}

// TestBeamPasser: a pass's valid result reaches the caller; a garbled or
// hostile result is refused; data whose identity or shape changed are
// refused with ErrDataChanged; a refused request never runs dplr-beam.
func TestBeamPasser(t *testing.T) {
	bin, dir := fakeBeam(t)
	ds := smallRows(40, 3)
	id := dataio.IdentityOf(ds)
	sh := pass.ShapeOf(ds)
	ctx := context.Background()
	req := data.PassRequest{Kind: pass.RowsMoment, Params: map[string]float64{"clip": 1.5}}
	want, err := pass.Local(ds).Pass(ctx, req)
	require.NoError(t, err)
	b := BeamData{Binary: bin, Data: "x/*.npy", Kind: data.Rows, Stderr: &syncBuffer{}, Work: t.TempDir()}
	p := b.Passer(sh, BeamSource{Identity: id})
	out := filepath.Join(dir, "out")

	writeGood := func(t *testing.T) {
		t.Helper()
		require.NoError(t, os.RemoveAll(out))
		require.NoError(t, WritePassResult(out, req.Kind, want, sh, BeamSource{Identity: id}))
	}
	editManifest := func(t *testing.T, edit func(m *BeamPassResult)) {
		t.Helper()
		writeGood(t)
		path := filepath.Join(out, PassResultName)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		var m BeamPassResult
		require.NoError(t, json.Unmarshal(b, &m))
		edit(&m)
		writeJSON(t, path, m)
	}

	writeGood(t)
	got, err := p.Pass(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	// The request dplr-beam received reads back as the one sent.
	k, gsh, greq, files, err := ReadPassRequest(filepath.Join(dir, "request.json"))
	require.NoError(t, err)
	assert.Equal(t, data.Rows, k)
	assert.Equal(t, sh, gsh)
	assert.Equal(t, req, greq)
	assert.Empty(t, files, "no shard states recorded")
	entries, err := os.ReadDir(b.Work)
	require.NoError(t, err)
	assert.Empty(t, entries, "the pass's files are removed")

	changed := smallRows(40, 3)
	changed.X.Set(7, 1, changed.X.At(7, 1)+1e-3)
	other := dataio.IdentityOf(changed)
	for name, tc := range map[string]struct {
		setup   func(t *testing.T)
		want    string
		changed bool
	}{
		"no result": {setup: func(t *testing.T) { require.NoError(t, os.RemoveAll(out)); require.NoError(t, os.MkdirAll(out, 0o755)) }, want: "no such file"},
		"garbled": {setup: func(t *testing.T) {
			writeGood(t)
			require.NoError(t, os.WriteFile(filepath.Join(out, PassResultName), []byte("{garbled"), 0o644))
		}, want: "invalid character"},
		"oversized manifest": {setup: func(t *testing.T) {
			writeGood(t)
			require.NoError(t, os.WriteFile(filepath.Join(out, PassResultName), bytes.Repeat([]byte(" "), maxPassManifest+1), 0o644))
		}, want: "larger than"},
		"unknown field": {setup: func(t *testing.T) {
			writeGood(t)
			path := filepath.Join(out, PassResultName)
			b, _ := os.ReadFile(path)
			require.NoError(t, os.WriteFile(path, append([]byte(`{"evil":1,`), b[1:]...), 0o644))
		}, want: "unknown field"},
		"format":    {setup: func(t *testing.T) { editManifest(t, func(m *BeamPassResult) { m.Format = "v0" }) }, want: "format"},
		"pass kind": {setup: func(t *testing.T) { editManifest(t, func(m *BeamPassResult) { m.Pass = "rows.other" }) }, want: "asked for"},
		"records":   {setup: func(t *testing.T) { editManifest(t, func(m *BeamPassResult) { m.Records = 39 }) }, want: "39 records"},
		"scalar": {setup: func(t *testing.T) {
			editManifest(t, func(m *BeamPassResult) { m.Scalars = map[string]float64{"x": 1} })
		}, want: `unknown scalar "x"`},
		"path": {setup: func(t *testing.T) {
			editManifest(t, func(m *BeamPassResult) { m.Outputs[0].File = "../out/output-0.npy" })
		}, want: "plain file name"},
		"inline data": {setup: func(t *testing.T) {
			editManifest(t, func(m *BeamPassResult) { m.Outputs[0].Data = []float64{1, 2, 3} })
		}, want: "in a file"},
		"output shape": {setup: func(t *testing.T) {
			editManifest(t, func(m *BeamPassResult) { m.Outputs[1].Rows, m.Outputs[1].Cols = 1, 9 })
		}, want: "want \"moment\" (3×3)"},
		"file shape": {setup: func(t *testing.T) {
			writeGood(t)
			require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(out, "output-0.npy"), []int{3, 1}, []float64{1, 2, 3}))
		}, want: "is 3×1, want 1×3"},
		"oversized output": {setup: func(t *testing.T) {
			writeGood(t)
			require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(out, "output-0.npy"), []int{1, 20000}, make([]float64, 20000)))
		}, want: "not a regular file of a 1×3"},
		"symlink output": {setup: func(t *testing.T) {
			writeGood(t)
			f := filepath.Join(out, "output-0.npy")
			require.NoError(t, os.Rename(f, f+".real"))
			require.NoError(t, os.Symlink(f+".real", f))
		}, want: "not a regular file"},
		"NaN output": {setup: func(t *testing.T) {
			writeGood(t)
			f := filepath.Join(out, "output-0.npy")
			require.NoError(t, os.Remove(f))
			writeRawNPY(t, f, []float64{1, math.NaN(), 3})
		}, want: "not finite"},
		"above bound": {setup: func(t *testing.T) {
			writeGood(t)
			require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(out, "output-0.npy"), []int{1, 3}, []float64{1e6, 0, 0}))
		}, want: "pass rows.moment"},
		"asymmetric": {setup: func(t *testing.T) {
			writeGood(t)
			m := append([]float64(nil), want.Outputs[1].Data...)
			m[1] += 1e-9
			require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(out, "output-1.npy"), []int{3, 3}, m))
		}, want: "not symmetric"},
		"identity": {setup: func(t *testing.T) {
			editManifest(t, func(m *BeamPassResult) { m.Identity = other })
		}, changed: true},
		"sketch": {setup: func(t *testing.T) {
			editManifest(t, func(m *BeamPassResult) { m.Identity.Sketch = m.Identity.Sketch[1:] })
		}, changed: true},
		"shape": {setup: func(t *testing.T) {
			editManifest(t, func(m *BeamPassResult) { m.Shape.N = 41 })
		}, changed: true},
		"bad identity": {setup: func(t *testing.T) {
			editManifest(t, func(m *BeamPassResult) { m.Identity.Rows = 0 })
		}, want: "source identity"},
	} {
		t.Run(name, func(t *testing.T) {
			tc.setup(t)
			_, err := p.Pass(ctx, req)
			require.Error(t, err)
			if tc.changed {
				assert.ErrorIs(t, err, ErrDataChanged)
				assert.Contains(t, err.Error(), "the data changed between passes")
				return
			}
			assert.ErrorIs(t, err, ErrPipeline)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	t.Run("exit status", func(t *testing.T) {
		writeGood(t)
		t.Setenv("FAKE_EXIT", "3")
		_, err := p.Pass(ctx, req)
		assert.ErrorIs(t, err, ErrPipeline)
		assert.Contains(t, err.Error(), "exit status 3")
	})
	t.Run("cancelled", func(t *testing.T) {
		writeGood(t)
		c, cancel := context.WithCancel(ctx)
		cancel()
		_, err := p.Pass(c, req)
		assert.ErrorIs(t, err, ErrPipeline)
		assert.ErrorIs(t, err, context.Canceled)
	})
	t.Run("cancelled while running", func(t *testing.T) {
		writeGood(t)
		t.Setenv("FAKE_SLEEP", "60")
		c, cancel := context.WithCancel(ctx)
		bs := b
		progress := &syncBuffer{}
		bs.Stderr = progress
		go func() {
			// Cancel once dplr-beam has started (it wrote its progress).
			for !strings.Contains(progress.String(), "fake progress") {
				runtime.Gosched()
			}
			cancel()
		}()
		_, err := bs.Passer(sh, BeamSource{Identity: id}).Pass(c, req)
		assert.ErrorIs(t, err, ErrPipeline)
		assert.ErrorIs(t, err, context.Canceled)
	})
	t.Run("refused request", func(t *testing.T) {
		require.NoError(t, os.Remove(filepath.Join(dir, "request.json")))
		for _, r := range []data.PassRequest{
			{Kind: pass.RowsMoment},
			{Kind: pass.RowsMoment, Params: map[string]float64{"clip": -1}},
			{Kind: "rows.unknown"},
		} {
			_, err := p.Pass(ctx, r)
			require.Error(t, err)
			assert.False(t, errors.Is(err, ErrPipeline), err)
		}
		_, err := os.Stat(filepath.Join(dir, "request.json"))
		assert.True(t, os.IsNotExist(err), "dplr-beam did not run")
	})
}

// writeRawNPY writes a 1×len(v) float64 .npy file without checking the
// values.
func writeRawNPY(t *testing.T, path string, v []float64) {
	t.Helper()
	hdr := "{'descr': '<f8', 'fortran_order': False, 'shape': (1, " + itoa(len(v)) + "), }"
	for (10+len(hdr)+1)%64 != 0 {
		hdr += " "
	}
	hdr += "\n"
	b := []byte("\x93NUMPY\x01\x00")
	b = append(b, byte(len(hdr)), byte(len(hdr)>>8))
	b = append(b, hdr...)
	for _, x := range v {
		u := math.Float64bits(x)
		for k := range 8 {
			b = append(b, byte(u>>(8*k)))
		}
	}
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lines returns the lines of the file at path.
func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestBeamReadFlags: the shard-reading options reach every dplr-beam run
// (describe, each pass, stats) as its flags, and the defaults add none.
func TestBeamReadFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    BeamData
		want string
	}{
		{"defaults", BeamData{}, ""},
		{"all", BeamData{Format: "csv", Header: "yes", Scale: 1.0 / 255, Features: []string{"a", "2"}, UserColumn: "uid", ResponseColumn: "0"},
			" --format csv --header yes --features a,2 --user-column uid --response-column 0 --scale 0.00392156862745098"},
		{"parquet list", BeamData{Format: "parquet", FeatureList: "v", Scale: -2}, " --format parquet --feature-list v --scale -2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin, dir := fakeBeam(t)
			ds := smallRows(30, 3)
			id := dataio.IdentityOf(ds)
			sh := pass.ShapeOf(ds)
			writeJSON(t, filepath.Join(dir, "describe.json"), BeamDescription{Format: BeamPassFormat, Kind: data.Rows,
				BeamShape: ShapeOfRemote(sh), Shards: 1, BeamSource: BeamSource{Identity: id}})
			req := data.PassRequest{Kind: pass.RowsMoment, Params: map[string]float64{"clip": 1}}
			res, err := pass.Local(ds).Pass(context.Background(), req)
			require.NoError(t, err)
			require.NoError(t, WritePassResult(filepath.Join(dir, "out"), req.Kind, res, sh, BeamSource{Identity: id}))
			b := tc.b
			b.Binary, b.Data, b.Kind, b.Stderr, b.Work = bin, "x/*.csv", data.Rows, &syncBuffer{}, t.TempDir()
			_, _, err = DescribeBeam(context.Background(), b)
			require.NoError(t, err)
			_, err = b.Passer(sh, BeamSource{Identity: id}).Pass(context.Background(), req)
			require.NoError(t, err)
			args := lines(t, filepath.Join(dir, "args"))
			require.Len(t, args, 2)
			assert.Equal(t, "describe --data x/*.csv --kind rows"+tc.want, args[0])
			assert.True(t, strings.HasPrefix(args[1], "pass --data x/*.csv --kind rows"+tc.want+" --request "), args[1])
		})
	}
}

// TestBeamTempDir: each dplr-beam run gets its own TMPDIR below the work
// directory (the system's temporary directory for a run without one),
// removed when it exits, even when it failed: a describe and a pass leave
// nothing in the temporary directory nor in the work directory.
func TestBeamTempDir(t *testing.T) {
	bin, dir := fakeBeam(t)
	work, tmp := t.TempDir(), t.TempDir()
	ds := smallRows(30, 3)
	id := dataio.IdentityOf(ds)
	sh := pass.ShapeOf(ds)
	writeJSON(t, filepath.Join(dir, "describe.json"), BeamDescription{Format: BeamPassFormat, Kind: data.Rows,
		BeamShape: ShapeOfRemote(sh), Shards: 1, BeamSource: BeamSource{Identity: id}})
	req := data.PassRequest{Kind: pass.RowsMoment, Params: map[string]float64{"clip": 1}}
	res, err := pass.Local(ds).Pass(context.Background(), req)
	require.NoError(t, err)
	require.NoError(t, WritePassResult(filepath.Join(dir, "out"), req.Kind, res, sh, BeamSource{Identity: id}))
	t.Setenv("TMPDIR", tmp)
	b := BeamData{Binary: bin, Data: "x/*.npy", Kind: data.Rows, Stderr: &syncBuffer{}, Work: work}
	ctx := context.Background()
	_, _, err = DescribeBeam(ctx, b)
	require.NoError(t, err)
	_, err = b.Passer(sh, BeamSource{Identity: id}).Pass(ctx, req)
	require.NoError(t, err)
	noWork := b
	noWork.Work = ""
	_, _, err = DescribeBeam(ctx, noWork)
	require.NoError(t, err)
	t.Setenv("FAKE_EXIT", "1")
	_, _, err = DescribeBeam(ctx, b)
	require.Error(t, err)

	dirs := lines(t, filepath.Join(dir, "tmpdirs"))
	require.Len(t, dirs, 4)
	for i, d := range dirs {
		parent := work
		if i == 2 {
			parent = tmp
		}
		assert.Equal(t, parent, filepath.Dir(d), "run %d's TMPDIR", i)
		assert.NoDirExists(t, d, "run %d's TMPDIR is removed", i)
	}
	for _, d := range []string{work, tmp} {
		left, err := os.ReadDir(d)
		require.NoError(t, err)
		assert.Empty(t, left, d)
	}
}

// testStates returns trusted states of files named paths.
func testStates(paths ...string) []dataio.FileState {
	var out []dataio.FileState
	for i, p := range paths {
		out = append(out, dataio.FileState{Path: p, Size: 100, ModTime: 5, Stamp: fmt.Sprintf("1:%d:100:5.000000000", i), Changed: 5})
	}
	return out
}

// TestBeamPasserStates: with the shards' states recorded by describe,
// each pass request carries them and the result must report exactly them
// and no identity; other states, an identity instead, or dplr-beam's
// exit for a changed shard are refused with ErrDataChanged; another
// failure stays ErrPipeline.
func TestBeamPasserStates(t *testing.T) {
	bin, dir := fakeBeam(t)
	ds := smallRows(40, 3)
	id := dataio.IdentityOf(ds)
	sh := pass.ShapeOf(ds)
	files := testStates("a.npy", "b.npy")
	ctx := context.Background()
	writeJSON(t, filepath.Join(dir, "describe.json"), BeamDescription{Format: BeamPassFormat, Kind: data.Rows,
		BeamShape: ShapeOfRemote(sh), Shards: 2, BeamSource: BeamSource{Identity: id, Files: files}})
	b := BeamData{Binary: bin, Data: "x/*.npy", Kind: data.Rows, Stderr: &syncBuffer{}, Work: t.TempDir()}
	gsh, src, err := DescribeBeam(ctx, b)
	require.NoError(t, err)
	assert.Equal(t, BeamSource{Identity: id, Files: files}, src)
	req := data.PassRequest{Kind: pass.RowsMoment, Params: map[string]float64{"clip": 1.5}}
	want, err := pass.Local(ds).Pass(ctx, req)
	require.NoError(t, err)
	out := filepath.Join(dir, "out")
	other := testStates("a.npy", "b.npy")
	other[1].Stamp = "1:1:100:6.000000000"
	for _, tc := range []struct {
		name   string
		result BeamSource
		exit   string
		err    error
	}{
		{"the recorded states", BeamSource{Files: files}, "", nil},
		{"another state", BeamSource{Files: other}, "", ErrDataChanged},
		{"a shard fewer", BeamSource{Files: files[:1]}, "", ErrDataChanged},
		{"the identity instead", BeamSource{Identity: id}, "", ErrDataChanged},
		{"states and identity", BeamSource{Identity: id, Files: files}, "", ErrDataChanged},
		{"dplr-beam found a shard changed", BeamSource{Files: files}, "3", ErrDataChanged},
		{"dplr-beam failed", BeamSource{Files: files}, "1", ErrPipeline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.RemoveAll(out))
			require.NoError(t, WritePassResult(out, req.Kind, want, sh, tc.result))
			t.Setenv("FAKE_EXIT", tc.exit)
			got, err := b.Passer(gsh, src).Pass(ctx, req)
			_, _, _, sent, rerr := ReadPassRequest(filepath.Join(dir, "request.json"))
			require.NoError(t, rerr)
			assert.Equal(t, files, sent, "the request carries the recorded states")
			if tc.err == nil {
				require.NoError(t, err)
				assert.Equal(t, want, got)
				return
			}
			assert.ErrorIs(t, err, tc.err)
			assert.Nil(t, got)
			if tc.err == ErrPipeline {
				assert.NotErrorIs(t, err, ErrDataChanged)
			}
		})
	}
}
