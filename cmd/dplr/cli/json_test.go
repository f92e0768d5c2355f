package cli

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

type inner struct {
	V float64 `json:"v"`
}

type sample struct {
	inner
	Name    string             `json:"name"`
	Metrics map[string]float64 `json:"metrics"`
	Series  []float64          `json:"series,omitempty"`
	Empty   []float64          `json:"empty,omitempty"`
	Skip    int                `json:"-"`
	M       *mat.Dense         `json:"m"`
	Ptr     *float64           `json:"ptr"`
	Any     any                `json:"any"`
	Raw     json.RawMessage    `json:"raw"`
	hidden  int
}

func TestWriteJSON(t *testing.T) {
	inf := math.Inf(1)
	s := sample{
		inner:   inner{V: math.NaN()},
		Name:    "x",
		Metrics: map[string]float64{"a": inf, "b": 1.5},
		Series:  []float64{1, math.Inf(-1)},
		Empty:   []float64{},
		Skip:    3,
		M:       mat.NewDense(1, 2, []float64{0.25, math.NaN()}),
		Ptr:     &inf,
		Any:     []any{math.NaN(), "s", 2},
		Raw:     json.RawMessage(`{"k":1}`),
		hidden:  1,
	}
	var buf bytes.Buffer
	require.NoError(t, writeReportJSON(&buf, s))
	var compact bytes.Buffer
	require.NoError(t, json.Compact(&compact, buf.Bytes()))
	assert.Equal(t, `{"v":"NaN","name":"x","metrics":{"a":"Infinity","b":1.5},"series":[1,"-Infinity"],"m":[[0.25,"NaN"]],"ptr":"Infinity","any":["NaN","s",2],"raw":{"k":1}}`,
		compact.String())
	// Indented output is valid JSON ending in a newline; finite values
	// encode exactly as encoding/json does.
	buf.Reset()
	require.NoError(t, writeReportJSON(&buf, map[string]any{"x": []float64{0.1, 1e21, -0}}))
	assert.Equal(t, "{\n  \"x\": [\n    0.1,\n    1e+21,\n    0\n  ]\n}\n", buf.String())
	err := writeReportJSON(&buf, map[string]any{"f": func() {}})
	assert.ErrorContains(t, err, "unsupported type")
	p := filepath.Join(t.TempDir(), "r.json")
	require.NoError(t, saveReportJSON(p, []float64{math.NaN()}))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "[\n  \"NaN\"\n]\n", string(b))
}
