package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dplr/dplr/client"
)

// byteSize is a flag.Value for a memory size: a number of bytes with an
// optional unit (K, M, G, T with or without "iB"/"B", powers of 1024), or
// 0 for no limit.
type byteSize int64

func (b *byteSize) String() string {
	if b == nil || *b == 0 {
		return "0"
	}
	return client.FormatMemory(int64(*b))
}

// Set parses a size such as "8GiB", "512M" or "1e9".
func (b *byteSize) Set(s string) error {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := 1.0
	for i, u := range []string{"K", "M", "G", "T", "P"} {
		if strings.HasSuffix(t, u) {
			mult = math.Pow(1024, float64(i+1))
			t = strings.TrimSpace(strings.TrimSuffix(t, u))
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || math.IsNaN(v) || v*mult >= math.MaxInt64 {
		return fmt.Errorf("%q is not a memory size (e.g. 8GiB, 512M, 0 for no limit)", s)
	}
	*b = byteSize(v * mult)
	return nil
}
