package dataio

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
)

func TestColumnScales(t *testing.T) {
	dir := t.TempDir()
	csv := writeTemp(t, dir, "t.csv", []byte("a,b,c\n1,200,0.5\n3,400,1.5\n-1,100,2\n"))
	users := writeTemp(t, dir, "u.csv", []byte("user,a,b,y\n1,1,200,0.5\n2,3,400,1.5\n1,-1,100,2\n"))
	plain, plainID, err := LoadIdentity(csv, LoadOptions{})
	require.NoError(t, err)
	scales := []float64{2, 100, 0.5}
	ds, id, err := LoadIdentity(csv, LoadOptions{ColumnScales: scales, Scale: 2})
	require.NoError(t, err)
	n, p := ds.X.Dims()
	for i := 0; i < n; i++ {
		for j := 0; j < p; j++ {
			assert.InDelta(t, 2*plain.X.At(i, j)/scales[j], ds.X.At(i, j), 1e-15, "x[%d][%d]: scale, then divide by the column's scale", i, j)
		}
	}
	assert.NotEqual(t, plain.Hash, ds.Hash, "the view's content hash changes with the scales")
	assert.Equal(t, plainID.Hash, id.Hash, "the source identity (the budget's key) does not")

	u0, err := Load(users, LoadOptions{Kind: data.Users})
	require.NoError(t, err)
	u, err := Load(users, LoadOptions{Kind: data.Users, ColumnScales: []float64{1, 100}})
	require.NoError(t, err)
	un, up := u.X.Dims()
	require.Equal(t, 2, up)
	for i := 0; i < un; i++ {
		assert.Equal(t, u0.X.At(i, 0), u.X.At(i, 0))
		assert.InDelta(t, u0.X.At(i, 1)/100, u.X.At(i, 1), 1e-15, "users features are divided too")
	}

	h, err := PrepareFile(csv, LoadOptions{ColumnScales: scales}, filepath.Join(dir, "cache"))
	require.NoError(t, err)
	require.NotNil(t, h.View)
	assert.Equal(t, scales, h.View.ColumnScales, "the prepared handle records the scales")
	assert.True(t, h.ColumnScaled)
	h0, err := PrepareFile(csv, LoadOptions{}, filepath.Join(dir, "cache"))
	require.NoError(t, err)
	assert.NotEqual(t, h0.Hash, h.Hash, "a scaled view is another cache entry")
	assert.False(t, h0.ColumnScaled)
	for _, hh := range []Handle{h, h0} { // the plugin's data set carries the flag; so does a reused record
		o, cl, err := Open(hh)
		require.NoError(t, err)
		assert.Equal(t, hh.ColumnScaled, o.ColumnScaled)
		require.NoError(t, cl.Close())
	}
	again, err := PrepareFile(csv, LoadOptions{ColumnScales: scales}, filepath.Join(dir, "cache"))
	require.NoError(t, err)
	assert.Equal(t, h, again)

	for _, tc := range []struct {
		name string
		opt  LoadOptions
		want string
	}{
		{"wrong count", LoadOptions{ColumnScales: []float64{1, 2}}, "2 column scales for 3 columns"},
		{"zero", LoadOptions{ColumnScales: []float64{1, 0, 1}}, "column scale 1 is 0"},
		{"negative", LoadOptions{ColumnScales: []float64{1, 1, -3}}, "column scale 2 is -3"},
		{"NaN", LoadOptions{ColumnScales: []float64{math.NaN(), 1, 1}}, "column scale 0 is NaN"},
		{"infinite", LoadOptions{ColumnScales: []float64{1, math.Inf(1), 1}}, "positive and finite"},
		{"trace data", LoadOptions{Kind: data.Trace, D1: 1, D2: 2, ColumnScales: []float64{1, 1}}, "not to trace data"},
		{"overflow", LoadOptions{ColumnScales: []float64{1e-308, 1, 1}}, "not finite after dividing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(csv, tc.opt)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestReadColumnScales(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, file, content string
		want                []float64
		err                 string
	}{
		{"one CSV line", "s.csv", "1,2.5,1e3\n", []float64{1, 2.5, 1000}, ""},
		{"with a header", "h.csv", "age,bmi,bp\n10,5,20\n", []float64{10, 5, 20}, ""},
		{"a table", "t.csv", "1,2\n3,4\n", nil, "want one line"},
		{"text", "x.csv", "a,b\nc,d\n", nil, "column scales"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadColumnScales(writeTemp(t, dir, tc.file, []byte(tc.content)))
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	vec := writeTemp(t, dir, "s.npy", npyFile(1, "<f8", false, []int{3}, encode(binary.LittleEndian, []float64{4, 5, 6})))
	got, err := ReadColumnScales(vec)
	require.NoError(t, err)
	assert.Equal(t, []float64{4, 5, 6}, got, "a .npy vector")
}
