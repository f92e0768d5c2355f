package cli

import (
	"fmt"
	"strings"

	"github.com/dplr/dplr/client"
)

// byteSize is a flag.Value for a memory size: a number of bytes with an
// optional unit (K, M, G, T, P with or without "iB"/"B", powers of 1024), or
// 0 for no limit.
type byteSize int64

func (b *byteSize) String() string {
	if b == nil || *b == 0 {
		return "0"
	}
	return client.FormatMemory(int64(*b))
}

// Set parses a size such as "8GiB", "512M" or "1e9" (client.ParseBytes),
// or 0.
func (b *byteSize) Set(s string) error {
	v, err := client.ParseBytes(s)
	if err != nil && strings.TrimSpace(s) != "0" {
		return fmt.Errorf("%q is not a memory size (e.g. 8GiB, 512M, 0 for no limit)", s)
	}
	*b = byteSize(v)
	return nil
}
