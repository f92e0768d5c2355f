package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/privacy"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// buildPlugins compiles the misbehaving test plugin and the example plugin
// once per test binary.
func buildPlugins(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "dplr-host-test")
		if buildErr != nil {
			return
		}
		for _, b := range []struct{ out, pkg string }{
			{"dplr-bad", "../transport/testdata/dplr-bad"},
			{"dplr-remote", "./testdata/dplr-remote"},
			{"dplr-example", "github.com/dplr/dplr/examples/meanplugin/cmd/dplr-example"},
		} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, b.out), b.pkg)
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = err
				binDir = string(out)
				return
			}
		}
	})
	require.NoError(t, buildErr, binDir)
	return binDir
}

// TestMain removes the built plugins (this file's and proc_test.go's) when the package's tests end.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildErr == nil && binDir != "" {
		os.RemoveAll(binDir)
	}
	if hostileErr == nil && hostileBin != "" {
		os.RemoveAll(filepath.Dir(hostileBin))
	}
	os.Exit(code)
}

func fitReq(est string) Call {
	return Call{Estimator: est, Grant: privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}}
}

func TestBadPluginsAreReportedNotFatal(t *testing.T) {
	dir := buildPlugins(t)
	bad := filepath.Join(dir, "dplr-bad")
	opt := Options{StartTimeout: 2 * time.Second, CallTimeout: 2 * time.Second}

	startFailures := []struct {
		mode, want string
	}{
		{"hang-start", "starting plugin"},
		{"garbage-stdout", "starting plugin"},
		{"exit-start", "starting plugin"},
		{"wrong-version", "starting plugin"},
		{"hang-catalogue", "catalogue"},
		{"bad-catalogue", "malformed catalogue"},
	}
	for _, tc := range startFailures {
		t.Run("start/"+tc.mode, func(t *testing.T) {
			t.Setenv("DPLR_BAD_MODE", tc.mode)
			p, err := Start(context.Background(), bad, opt)
			require.Error(t, err)
			assert.Nil(t, p)
			assert.ErrorIs(t, err, ErrPlugin)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), bad, "the error names the plugin")
		})
	}

	fitFailures := []struct {
		mode, want string
		wantErr    error
		noise      bool
	}{
		{"crash-fit", "crashed", ErrPlugin, true},
		{"overspend", "do not fit the grant", ErrPlugin, true},
		{"tenfold", "do not fit the grant", ErrPlugin, true},
		{"tiny-epsilon", "unverifiable", ErrPlugin, true},
		{"rho-mismatch", "unverifiable", ErrPlugin, true},
		{"swap-steps", "differs from the one announced", ErrPlugin, true},
		{"die-before-step", "crashed", ErrPlugin, false},
		{"nan", "non-finite", ErrPlugin, true},
		{"short-matrix", "incomplete", ErrPlugin, true},
		{"out-of-order", "out of order", ErrPlugin, true},
		{"no-result", "without a result", ErrPlugin, true},
		{"unannounced-step", "announced", ErrPlugin, true},
		{"estimator-error", "rank 99 exceeds", ErrEstimator, false},
		{"bad-request", "lambda lists 2 values", ErrRequest, false},
		{"late-refusal", "changed its mind", ErrRequest, true},
	}
	for _, tc := range fitFailures {
		t.Run("fit/"+tc.mode, func(t *testing.T) {
			t.Setenv("DPLR_BAD_MODE", tc.mode)
			p, err := Start(context.Background(), bad, opt)
			require.NoError(t, err)
			defer p.Close()
			out, err := p.Fit(context.Background(), fitReq("bad-"+tc.mode), Events{})
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.wantErr)
			assert.Contains(t, err.Error(), tc.want)
			require.NotNil(t, out)
			assert.Equal(t, tc.noise, out.NoiseDrawn(), "the host knows whether noise was drawn")
		})
	}

	t.Run("fit/hang-fit is cancelled by its context", func(t *testing.T) {
		t.Setenv("DPLR_BAD_MODE", "hang-fit")
		p, err := Start(context.Background(), bad, opt)
		require.NoError(t, err)
		defer p.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		out, err := p.Fit(ctx, fitReq("bad-hang-fit"), Events{})
		require.Error(t, err)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.True(t, out.NoiseDrawn())
	})

	t.Run("well-behaved mode passes validation", func(t *testing.T) {
		t.Setenv("DPLR_BAD_MODE", "ok")
		p, err := Start(context.Background(), bad, opt)
		require.NoError(t, err)
		defer p.Close()
		out, err := p.Fit(context.Background(), fitReq("bad-ok"), Events{})
		require.NoError(t, err)
		require.Len(t, out.Matrices, 1)
		assert.Equal(t, []float64{1, 2}, out.Matrices[0].Data)
		assert.Equal(t, "zcdp", out.Achieved.Composition, "the charge keeps the composable zCDP figures")
		assert.Equal(t, out.Announced, out.Steps, "the verified list is the announced one")
	})
}

func TestDiscoverAndManifest(t *testing.T) {
	dir := buildPlugins(t)
	other := t.TempDir()
	// A non-executable dplr-* file and a non-plugin executable are skipped.
	require.NoError(t, os.WriteFile(filepath.Join(other, "dplr-notexec"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(other, "tool"), []byte("x"), 0o755))
	// A plugin of the same name in a later directory is shadowed.
	require.NoError(t, os.WriteFile(filepath.Join(other, "dplr-example"), []byte("x"), 0o755))
	got, _ := DiscoverAll([]string{dir, other, filepath.Join(other, "missing")})
	assert.Equal(t, []string{filepath.Join(dir, "dplr-bad"), filepath.Join(dir, "dplr-example"), filepath.Join(dir, "dplr-remote")}, got)
	found, shadowed := DiscoverAll([]string{dir, other, dir})
	assert.Equal(t, got, found)
	assert.Equal(t, []Shadowed{{Path: filepath.Join(other, "dplr-example"), By: filepath.Join(dir, "dplr-example")}}, shadowed,
		"the hidden plugin is reported once; a directory listed twice hides nothing")
	// The two builds beside a host: the OpenBLAS one wins without a note.
	bin := t.TempDir()
	for _, d := range []string{openBLASDir, pureGoDir} {
		require.NoError(t, os.MkdirAll(filepath.Join(bin, d), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(bin, d, "dplr-pca"), []byte("x"), 0o755))
	}
	found, shadowed = DiscoverAll([]string{filepath.Join(bin, openBLASDir), filepath.Join(bin, pureGoDir), other})
	assert.Equal(t, filepath.Join(bin, openBLASDir, "dplr-pca"), found[0])
	assert.Empty(t, shadowed)
	found, shadowed = DiscoverAll([]string{filepath.Join(bin, pureGoDir), filepath.Join(bin, openBLASDir)})
	assert.Len(t, found, 1)
	assert.Len(t, shadowed, 1, "the other way round is not the documented preference")

	ex := filepath.Join(dir, "dplr-example")
	sum, err := fileSHA256(ex)
	require.NoError(t, err)
	good := filepath.Join(t.TempDir(), "SHA256SUMS")
	require.NoError(t, os.WriteFile(good, []byte(hex.EncodeToString(sum)+"  dplr-example\n"), 0o644))
	m, err := ReadManifest(good)
	require.NoError(t, err)
	p, err := Start(context.Background(), ex, Options{Manifest: m})
	require.NoError(t, err)
	p.Close()

	sum[0] ^= 0xff
	badM := filepath.Join(t.TempDir(), "SHA256SUMS")
	require.NoError(t, os.WriteFile(badM, []byte(hex.EncodeToString(sum)+"  dplr-example\n"), 0o644))
	m, err = ReadManifest(badM)
	require.NoError(t, err)
	_, err = Start(context.Background(), ex, Options{Manifest: m})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrPlugin)

	_, err = Start(context.Background(), filepath.Join(dir, "dplr-bad"), Options{Manifest: m})
	assert.ErrorContains(t, err, "not listed")

	corrupt := filepath.Join(t.TempDir(), "SHA256SUMS")
	require.NoError(t, os.WriteFile(corrupt, []byte("zz dplr-example\n"), 0o644))
	_, err = ReadManifest(corrupt)
	assert.ErrorContains(t, err, "not a SHA-256 digest")
}

// fileSHA256 returns the SHA-256 digest of a file.
func fileSHA256(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}
