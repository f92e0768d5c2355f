package stats

import (
	"os"
	"strconv"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

func strconvFormat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func TestMain(m *testing.M) {
	beam.Init()
	os.Exit(m.Run())
}
