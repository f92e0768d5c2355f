package dataio

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCSVFirstRecord(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	gz := filepath.Join(dir, "u.csv.gz")
	f, err := os.Create(gz)
	require.NoError(t, err)
	zw := gzip.NewWriter(f)
	_, err = zw.Write([]byte("user,a,y\n1,2,3\n"))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())
	npy := filepath.Join(dir, "x.npy")
	require.NoError(t, SaveNPYFloat64(npy, []int{1, 2}, []float64{1, 2}))
	cases := []struct {
		name  string
		path  string
		delim rune
		want  []string
	}{
		{"header", write("h.csv", "user, a ,y\n1,2,3\n"), 0, []string{"user", "a ", "y"}},
		{"tsv", write("h.tsv", "user\ta\n1\t2\n"), 0, []string{"user", "a"}},
		{"explicit delimiter", write("h.txt.csv", "user;a\n1;2\n"), ';', []string{"user", "a"}},
		{"gzip", gz, 0, []string{"user", "a", "y"}},
		{"not csv", npy, 0, nil},
		{"empty", write("e.csv", ""), 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CSVFirstRecord(tc.path, tc.delim)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	_, err = CSVFirstRecord(filepath.Join(dir, "missing.csv"), 0)
	assert.Error(t, err)
}
