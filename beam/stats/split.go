package stats

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
)

// split is what one DoFn call of a pipeline reads: rows [Lo, Hi) of a
// rows file that can be read in ranges (Ranged: a local, uncompressed
// C-order .npy or IDX file, whose header the driver parsed once), or the
// whole shard at Path.
type split struct {
	Path   string
	Ranged bool
	File   dataio.RowFile
	Lo, Hi int
}

// splitBytes bounds the float64 bytes of one range (a variable for the
// tests): a worker holds one range at a time, and a large file is read by
// as many bundles as the runner gives it.
var splitBytes = 32 << 20

// splitShards returns the splits of the shards at paths read as data of
// the given kind with ro: ranges of rows for each rows file that can be
// read so, the whole shard otherwise (and for a file whose header is bad:
// the pipeline then reads it whole and fails with the reader's message).
func splitShards(paths []string, kind data.Kind, ro ReadOptions) []split {
	var out []split
	for _, path := range paths {
		f, ok := rowFile(path, kind, ro)
		if !ok {
			out = append(out, split{Path: path})
			continue
		}
		step := max(1, splitBytes/(8*f.P))
		for lo := 0; lo < f.N; lo += step {
			out = append(out, split{Path: path, Ranged: true, File: f, Lo: lo, Hi: min(lo+step, f.N)})
		}
	}
	return out
}

// rowFile parses the header of the rows file at path if it can be read in
// ranges.
func rowFile(path string, kind data.Kind, ro ReadOptions) (dataio.RowFile, bool) {
	if kind != data.Rows || strings.Contains(path, "://") || isParquet(path, ro.Format) {
		return dataio.RowFile{}, false
	}
	lo, err := ro.loadFor(path, kind, 0, 0)
	if err != nil {
		return dataio.RowFile{}, false
	}
	f, ok, err := dataio.SplitRows(path, lo)
	return f, ok && err == nil
}

// splitsOf adds splits to s, redistributed so that the runner can hand
// them to several workers (a Create is read by one).
func splitsOf(s beam.Scope, splits []split) beam.PCollection {
	return beam.Reshuffle(s, beam.CreateList(s, splits))
}

// readSplit reads the records of sp as readShard reads a shard (rows
// unscaled), adding their source identity to id when it is not nil. A
// range's rows are in a buffer that release returns for reuse.
func readSplit(ctx context.Context, sp split, kind data.Kind, ro ReadOptions, d1, d2 int, id *dataio.IdentityParts) (*shard, error) {
	if !sp.Ranged {
		return readShard(ctx, sp.Path, kind, ro, d1, d2, id)
	}
	m := (sp.Hi - sp.Lo) * sp.File.P
	var x []float64
	if b, ok := rangeBufs.Get().(*[]float64); ok {
		x = *b
	}
	if cap(x) < m {
		x = make([]float64, m)
	}
	sh := &shard{n: sp.Hi - sp.Lo, p: sp.File.P, x: x[:m], pooled: true}
	if err := sp.File.ReadRange(ctx, sp.Lo, sp.Hi, id, sh.x); err != nil {
		sh.release()
		return nil, fmt.Errorf("shard %s: %w", sp.Path, err)
	}
	return sh, nil
}

// rangeBufs holds the buffers of ranges read and released.
var rangeBufs sync.Pool

// release returns a range's buffer for reuse; sh is not used after.
func (sh *shard) release() {
	if sh.pooled {
		x := sh.x[:0]
		rangeBufs.Put(&x)
		sh.x, sh.pooled = nil, false
	}
}

func encodeSplit(v split) ([]byte, error) { return encodeGob(v) }
func decodeSplit(b []byte) (split, error) { return decodeGob[split](b) }

func init() {
	beam.RegisterCoder(reflect.TypeOf(split{}), encodeSplit, decodeSplit)
}
