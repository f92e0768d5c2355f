package dataio

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// fallbackMemory is assumed as physical memory where it cannot be read.
const fallbackMemory = 8 << 30

// physicalMemory returns the machine's physical memory in bytes (from
// /proc/meminfo), or fallbackMemory.
var physicalMemory = sync.OnceValue(func() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return fallbackMemory
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			if kb, err := strconv.ParseInt(fields[1], 10, 64); err == nil && kb > 0 {
				return kb << 10
			}
		}
	}
	return fallbackMemory
})

// DefaultMaxBytes returns the default bound on the memory a loaded data
// set may take (LoadOptions.MaxBytes): half of the machine's physical
// memory.
func DefaultMaxBytes() int64 {
	return physicalMemory() / 2
}

// maxBytes returns the effective in-memory bound.
func (o LoadOptions) maxBytes() int64 {
	if o.MaxBytes > 0 {
		return o.MaxBytes
	}
	return DefaultMaxBytes()
}

// csvLimits returns the CSV reader's bounds.
func (o LoadOptions) csvLimits(cfg csvConfig) csvConfig {
	cfg.maxRecord = o.MaxRecordBytes
	cfg.maxBytes = o.maxBytes()
	return cfg
}

// checkClaim refuses an array whose declared shape would take more than
// limit bytes in memory (limit ≤ 0: no bound), before anything is
// allocated for it: the float64 values, plus the raw payload unless it is
// float64 already.
func (p *pending) checkClaim(limit int64) error {
	count := p.nbytes / int64(max(p.dt.size, 1))
	c := 8 * count
	if p.dt.kind != 'f' || p.dt.size != 8 {
		c += p.nbytes
	}
	if limit > 0 && (c > limit || c < 0) {
		return p.wrap(fmt.Errorf("the header declares %d values, which take %s in memory, above the loading limit of %s (LoadOptions.MaxBytes, --max-data-bytes)",
			count, FormatBytes(c), FormatBytes(limit)))
	}
	return nil
}

// FormatBytes writes a byte count with a binary unit (e.g. "1.5 GiB").
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// ParseBytes parses a byte count with an optional unit: a plain number of
// bytes, or one followed by K, M, G, T or P (powers of 1024, with an
// optional "iB" or "B"), e.g. "512M", "4GiB".
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	up := strings.ToUpper(t)
	up = strings.TrimSuffix(strings.TrimSuffix(up, "B"), "I")
	if up != "" {
		switch up[len(up)-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		case 'P':
			mult = 1 << 50
		}
		if mult > 1 {
			up = up[:len(up)-1]
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(up), 64)
	if err != nil || v <= 0 || v*float64(mult) > 1<<62 || strings.ContainsAny(up, "_xX") {
		return 0, fmt.Errorf("size %q: want a positive number of bytes, optionally with K, M, G, T or P", s)
	}
	return int64(v * float64(mult)), nil
}
