package main

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/ledger"
)

func TestMain(m *testing.M) {
	beam.Init()
	os.Exit(m.Run())
}

// TestFitChargesSourceIdentity: dplr-beam charges the ledger under the
// source identity of the rows (the key dplr fit uses for the one file
// holding them); a failed pipeline spends nothing; a request the
// estimator refuses spends nothing.
func TestFitChargesSourceIdentity(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	r := rand.New(rand.NewPCG(3, 4))
	const n, p = 300, 6
	x := make([]float64, n*p)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(dir, "a.npy"), []int{100, p}, x[:100*p]))
	require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(dir, "b.npy"), []int{200, p}, x[100*p:]))
	whole := filepath.Join(t.TempDir(), "whole.npy")
	require.NoError(t, dataio.SaveNPYFloat64(whole, []int{n, p}, x))
	_, id, err := dataio.LoadIdentity(whole, dataio.LoadOptions{})
	require.NoError(t, err)

	spent := func() float64 {
		led, err := ledger.Open(context.Background(), home)
		require.NoError(t, err)
		defer led.Close()
		st, err := led.Show(context.Background(), id.Hash)
		if err != nil {
			return 0
		}
		return st.Spent.Rho + st.Spent.Epsilon
	}
	base := []string{"fit", "pca-analyze-gauss", "--home", home, "--rho", "0.5", "--set", "rank=2", "--set", "clip=3", "--seed", "1", "--out", filepath.Join(dir, "out.json")}

	// A corrupt shard: the pipeline fails, nothing is reserved.
	bad := filepath.Join(dir, "c.npy")
	require.NoError(t, os.WriteFile(bad, []byte("not an array"), 0o644))
	assert.Equal(t, 1, run(append(base, "--data", filepath.Join(dir, "*.npy"))))
	assert.Zero(t, spent())
	require.NoError(t, os.Remove(bad))

	// A refused request (rank above p) spends nothing either.
	assert.Equal(t, 2, run(append(append([]string{}, base...), "--set", "rank=9", "--data", filepath.Join(dir, "*.npy"))))
	assert.Zero(t, spent())

	assert.Equal(t, 0, run(append(base, "--data", filepath.Join(dir, "*.npy"))))
	assert.Greater(t, spent(), 0.0)
	_, err = os.Stat(filepath.Join(dir, "out.json"))
	require.NoError(t, err)
}
