package stats

import (
	"os"
	"strconv"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

func strconvFormat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// TestMain splits .npy and IDX files in ranges of a few hundred rows, so
// that the tests' files are read in several ranges (the env-gated
// Fashion-MNIST test restores the default).
func TestMain(m *testing.M) {
	splitBytes = 1 << 14
	beam.Init()
	os.Exit(m.Run())
}
