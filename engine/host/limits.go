package host

import (
	"fmt"

	"github.com/dplr/dplr/engine/transport"
)

// OutputBudget bounds the total size of one fit's output matrices: a
// plugin declaring several large matrices cannot make the host allocate
// more than MaxBytes in all, whatever each one's size.
type OutputBudget struct {
	// MaxBytes is the bound on all matrices together (8 bytes a value);
	// zero or less means DefaultMaxOutputBytes().
	MaxBytes int64
}

func (b OutputBudget) max() int64 {
	if b.MaxBytes > 0 {
		return b.MaxBytes
	}
	return DefaultMaxOutputBytes()
}

// Admit checks a chunk against the budget before the host allocates for
// it: a chunk of a matrix not yet in byName declares rows×cols more
// values, refused when all declared matrices would exceed the bound.
// Chunks of known matrices and malformed shapes are left to the chunk
// checks.
func (b OutputBudget) Admit(byName map[string]*Matrix, c transport.MatrixChunk) error {
	if _, ok := byName[c.Name]; ok || c.Rows <= 0 || c.Cols <= 0 {
		return nil
	}
	limit := b.max() / 8
	total := int64(0)
	for _, m := range byName {
		total += int64(m.Rows) * int64(m.Cols)
	}
	if c.Rows > limit || c.Cols > limit || c.Rows*c.Cols > limit-total {
		return fmt.Errorf("matrix %q (%d×%d) takes the outputs past the host's bound of %d bytes in all (%d values already declared)",
			c.Name, c.Rows, c.Cols, b.max(), total)
	}
	return nil
}

// DefaultMaxOutputBytes is the default bound on a fit's outputs: a quarter
// of the machine's physical memory (2 GiB where it cannot be read).
func DefaultMaxOutputBytes() int64 {
	if m := physicalMemory(); m > 0 {
		return m / 4
	}
	return 2 << 30
}
