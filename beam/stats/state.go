package stats

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
)

// The state of the shards (dataio.FileState): Describe records it where
// it names the content it hashed, and StatePass reads the shards only in
// that state, instead of hashing them again.
//
// A state is recorded only when every shard is a local file read in
// ranges of rows (a plain .npy or IDX rows file: splitShards): its header
// and every range are read through descriptors checked to be in the
// recorded state before and after each read (dataio.RowFile.ReadRange),
// so what is read is the content the state names even if a directory of
// the path is swapped meanwhile. Other shards (CSV, compressed, Parquet,
// trace and users data) are read by readers that open the file by its
// name more than once, and files on other Beam filesystems (gs://,
// s3://) offer no stamp a user cannot reproduce (an object's size and a
// modification time to the second): their passes take the source
// identity again in their own read (DescribedPass).

// maxSettle bounds the wait for a just-written shard's change time to
// settle (dataio.FileState.SettleWait); a longer wait (a clock ahead of
// this machine's, on a network filesystem) leaves the states unrecorded.
const maxSettle = 3 * time.Second

// splitStates returns the state of each shard of splits (sorted by path),
// or nil when one is not read in ranges or its state is not trusted.
func splitStates(splits []split) []dataio.FileState {
	var out []dataio.FileState
	for _, sp := range splits {
		if !sp.Ranged || !sp.File.State.Trusted() || strings.Contains(sp.Path, "://") {
			return nil
		}
		if sp.Lo == 0 {
			out = append(out, sp.File.State)
		}
	}
	slices.SortFunc(out, func(a, b dataio.FileState) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// settle waits until a read that starts now reads the content states
// name (their change times are settled); it returns states, or nil if
// that would take longer than maxSettle.
func settle(ctx context.Context, states []dataio.FileState) ([]dataio.FileState, error) {
	var wait time.Duration
	now := time.Now()
	for _, s := range states {
		wait = max(wait, s.SettleWait(now))
	}
	if wait > maxSettle {
		return nil, nil
	}
	if wait > 0 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
	return states, nil
}

// checkStates returns an error wrapping dataio.ErrFileChanged and naming
// the shard when the shards at paths, split as splits, are not those
// whose states want records: a shard added, removed, no longer read in
// ranges, or in another state.
func checkStates(paths []string, splits []split, want []dataio.FileState) error {
	rec := func(path string) (dataio.FileState, bool) {
		i, ok := slices.BinarySearchFunc(want, path, func(s dataio.FileState, p string) int { return strings.Compare(s.Path, p) })
		if !ok {
			return dataio.FileState{}, false
		}
		return want[i], true
	}
	for _, p := range paths {
		if _, ok := rec(p); !ok {
			return fmt.Errorf("shard %s was added since the data were described: %w", p, dataio.ErrFileChanged)
		}
	}
	for _, s := range want {
		if !slices.Contains(paths, s.Path) {
			return fmt.Errorf("shard %s was removed since the data were described: %w", s.Path, dataio.ErrFileChanged)
		}
	}
	for _, sp := range splits {
		s, _ := rec(sp.Path)
		if !sp.Ranged || sp.File.State != s {
			return fmt.Errorf("shard %s (described as %d bytes, modified %s): %w", sp.Path, s.Size,
				time.Unix(0, s.ModTime).UTC().Format(time.RFC3339Nano), dataio.ErrFileChanged)
		}
	}
	return nil
}

// StatePass is RunPass for rows data whose Description recorded the
// shards' states (Description.Files): the shards matching glob must be
// those files, each in its recorded state when the pipeline starts, and
// each range is read only from the file in that state, before and after
// the read; the records are not hashed again. Any change (a shard added,
// removed, modified, replaced, touched) fails with an error wrapping
// dataio.ErrFileChanged that names the shard, also when it happens while
// the pipeline runs.
func StatePass(ctx context.Context, glob string, shape *data.Remote, ro ReadOptions, req data.PassRequest, files []dataio.FileState, opt Options) (*data.PassResult, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("pass %s: no shard states", req.Kind)
	}
	if _, ok := rowsPasses[req.Kind]; !ok {
		return nil, fmt.Errorf("pass %s: shard states are recorded for rows data only", req.Kind)
	}
	check := func() ([]split, error) {
		paths, err := Expand(ctx, glob)
		if err != nil {
			if errors.Is(err, errNoMatch) {
				err = fmt.Errorf("%w: %w", err, dataio.ErrFileChanged)
			}
			return nil, err
		}
		splits := splitShards(paths, data.Rows, ro)
		return splits, checkStates(paths, splits, files)
	}
	splits, err := check()
	if err != nil {
		return nil, fmt.Errorf("pass %s: %w", req.Kind, err)
	}
	opt.Read = ro
	res, _, err := shardPass(ctx, splits, shape, ro, req, false, opt)
	if err != nil {
		if _, cerr := check(); cerr != nil {
			err = cerr // a shard changed while the pipeline ran
		}
		return nil, fmt.Errorf("pass %s: %w", req.Kind, err)
	}
	return res, nil
}
