package dataio

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/dplr/dplr/engine/data"
)

// streamBlockBytes is the target size of one converted block of a streamed
// preparation (float64 bytes): small enough that a block converted by one
// goroutine is still in cache when the next stage hashes it.
const streamBlockBytes = 1 << 19

// streamSlots bounds the blocks in flight in a streamed preparation (read,
// being converted, or waiting to be hashed and written), so the host's
// memory stays a few MiB whatever the data set's size.
func streamSlots(workers int) int { return 2*workers + 2 }

// rowSink takes the rows of a streamed reading, in order: scaled to
// float64 (floats), or as the bytes of a source of bytes (raw, when set:
// the rows are then never converted to scaled float64s).
type rowSink struct {
	floats func([]float64) error
	raw    func([]byte) error
}

// compactScale returns the scale a source of dtype dt read at scale s is
// kept compact with (a DTypeUint8 X), or 0 when it is not kept compact:
// only unsigned bytes, and only at a scale under which every byte stays
// finite (the others go through the float path, which names the value
// that overflows).
func compactScale(dt dtype, s float64) float64 {
	if dt == (dtype{kind: 'u', size: 1}) && isFinite(255*s) {
		return s
	}
	return 0
}

// streamBlock is one block of whole rows moving through a streamed
// preparation.
type streamBlock struct {
	row0  int           // index of its first row
	rows  int           // number of rows
	raw   []byte        // the rows as the file holds them
	out   []float64     // the rows converted and scaled
	dig   []byte        // the rows' source digests, 32 bytes each
	err   error         // a conversion error (the stream stops there)
	ready chan struct{} // signalled once a worker is done with it
}

// streamFile reads a data set whose X is a C-order .npy or IDX file (plain
// or gzip) in one streaming pass, without holding the source in memory: one
// goroutine reads (and decompresses) blocks of whole rows; workers convert
// each block to float64 and add its rows to their share of the source
// identity (unscaled values), keeping each row's digest, then scale it; the
// calling goroutine feeds the digests to the content hash in row order and
// passes the blocks to the sink that start returns once the shape and the
// side files are read (ref, when not nil, locates X in the file itself,
// which can be referenced in place: a float64 X read unscaled, or an X of
// bytes kept compact). The returned data set has
// everything but X, its hash set. A nil data set means the input does not
// qualify (the caller then reads it whole, or reports it): CSV, Fortran
// order, column options, or users whose ids are not in order. holding
// says whether X will be held in memory (bounded by opt.MaxBytes).
func streamFile(ctx context.Context, path string, opt LoadOptions, holding bool, start func(ds *data.Dataset, ref *FileRef, n, cols int, dt dtype) (rowSink, error)) (*data.Dataset, *idBuilder, error) {
	if opt.LabelColumn != "" || len(opt.FeatureColumns) > 0 || len(opt.ColumnScales) > 0 {
		return nil, nil, nil
	}
	src, p, n, cols, err := streamHeader(path, opt)
	if src == nil || err != nil {
		return nil, nil, err
	}
	defer src.Close()
	var ref *FileRef
	plain := !src.gz && src.st != nil && src.st.Mode().IsRegular()
	f8 := src.format == FormatNPY && p.dt == (dtype{kind: 'f', size: 8}) && nativeLE && mmapSupported && p.offset%8 == 0 && opt.scale() == 1
	if cs := compactScale(p.dt, opt.scale()); plain && (f8 || cs != 0) {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		ref = &FileRef{Path: abs, Offset: p.offset, DType: DTypeFloat64, Count: int64(n) * int64(cols),
			Size: src.st.Size(), ModTime: src.st.ModTime().UnixNano(), Stamp: fileStamp(src.st)}
		if !f8 {
			ref.DType, ref.Scale = DTypeUint8, cs
		}
	}
	if holding || ref == nil || ref.DType != DTypeFloat64 { // a fit may decode bytes to floats
		if err := p.checkClaim(opt.maxBytes()); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	ds := &data.Dataset{Kind: opt.kind(), Name: opt.Name}
	rowIDs, err := arraySides(ds, p.shape, opt)
	if err == nil && ds.Kind == data.Trace {
		err = completeTraceShape(ds, cols)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if ds.Kind == data.Users {
		if !slices.IsSorted(rowIDs) {
			return nil, nil, nil // rows must be regrouped
		}
		if _, err := GroupByUser(ds, rowIDs); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	sink, err := start(ds, ref, n, cols, p.dt)
	if err != nil {
		return nil, nil, err
	}
	sum, id, err := streamRows(ctx, p, ds, n, cols, opt.scale(), sideCols(ds, rowIDs), sink)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	ds.Hash = finishContentHash(sum, ds)
	return ds, id, nil
}

// prepareStreamed prepares a data set through streamFile: X is referenced
// in place when it is a float64, little-endian .npy file read unscaled or
// an uncompressed file of bytes (it is then only read, never copied), and
// written into the cache otherwise: as bytes with their scale for a source
// of bytes (compactScale), never expanded to float64 on disk, else as
// float64. ok is false if the input does not qualify.
func prepareStreamed(ctx context.Context, path string, opt LoadOptions, cdir string) (Handle, bool, error) {
	var inPlace *FileRef
	var tmpX string
	defer func() {
		if tmpX != "" {
			os.Remove(tmpX)
		}
	}()
	var n, cols int
	var xScale float64
	var tmp *os.File
	ds, id, err := streamFile(ctx, path, opt, false, func(ds *data.Dataset, ref *FileRef, rows, c int, dt dtype) (rowSink, error) {
		n, cols, inPlace = rows, c, ref
		if ref != nil {
			return rowSink{raw: func([]byte) error { return nil }}, nil
		}
		xScale = compactScale(dt, opt.scale())
		xBytes := 8 * int64(n*cols)
		if xScale != 0 {
			xBytes /= 8
		}
		err := checkCacheRoom(cdir, cacheNeed(ds, xBytes), opt.cacheMaxBytes())
		if err != nil {
			return rowSink{}, fmt.Errorf("prepare %s: %w", path, err)
		}
		if tmp, err = createTempX(cdir); err != nil {
			return rowSink{}, err
		}
		tmpX = tmp.Name()
		// Blocks are large: they go to the file without another copy.
		if xScale != 0 {
			return rowSink{raw: func(b []byte) error { _, err := tmp.Write(b); return err }}, nil
		}
		return rowSink{floats: func(out []float64) error { return writeLE(tmp, out) }}, nil
	})
	if tmp != nil {
		if cerr := tmp.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}
	if ds == nil || err != nil {
		if err != nil {
			err = fmt.Errorf("prepare %s: %w", path, err)
		}
		return Handle{}, false, err
	}
	ds.Name = cmp.Or(ds.Name, filepath.Base(path))
	h := canonicalHandle(ds, n, cols, filepath.Join(cdir, ds.Hash), xScale)
	if inPlace != nil {
		h.X = *inPlace
		if len(h.refs()) > 1 { // the side arrays live in the cache entry
			err = storeEntry(ds, &h, "")
		}
	} else {
		err = storeEntry(ds, &h, tmpX)
	}
	if err != nil {
		return Handle{}, false, err
	}
	source := id.finish()
	h.Source, h.View = &source, opt.view()
	return h, true, nil
}

// streamRows streams the n×cols payload of p through the pipeline described
// at streamFile, passing the rows to sink in order. It
// returns the content hash (header, view and row digests written; the
// caller adds the tail) and the source identity of the rows with the side
// columns sides.
func streamRows(ctx context.Context, p *pending, ds *data.Dataset, n, cols int, scale float64, sides []sideCol, sink rowSink) (hash.Hash, *idBuilder, error) {
	if p.known >= 0 && p.nbytes > p.known {
		return nil, nil, p.wrap(fmt.Errorf("%w: the header implies %d data bytes but only %d are present", errTruncated, p.nbytes, p.known))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rowBytes := cols * p.dt.size
	blockRows := max(1, streamBlockBytes/(8*cols))
	workers := max(1, min(runtime.GOMAXPROCS(0), 8))
	slots := make(chan *streamBlock, streamSlots(workers))
	for range cap(slots) {
		slots <- &streamBlock{ready: make(chan struct{}, 1)}
	}
	work := make(chan *streamBlock, cap(slots))  // to the workers
	order := make(chan *streamBlock, cap(slots)) // to the hasher, in order
	readErr := make(chan error, 1)

	// Reader: whole rows, in order; a slot is taken before each read so
	// that the blocks in flight never exceed the slots.
	go func() {
		defer close(work)
		defer close(order)
		for row := 0; row < n; {
			var b *streamBlock
			select {
			case b = <-slots:
			case <-ctx.Done():
				readErr <- nil
				return
			}
			b.row0, b.rows, b.err = row, min(blockRows, n-row), nil
			k := b.rows * rowBytes
			if cap(b.raw) < k {
				b.raw = make([]byte, blockRows*rowBytes)
			}
			b.raw = b.raw[:k]
			if m, err := io.ReadFull(p.r, b.raw); err != nil {
				got := int64(row)*int64(rowBytes) + int64(m)
				readErr <- p.wrap(fmt.Errorf("%w: header declares %d data bytes but the stream ends after %d (%w)", errTruncated, p.nbytes, got, err))
				return
			}
			row += b.rows
			order <- b
			work <- b
		}
		if err := expectEOF(p.r); err != nil {
			readErr <- p.wrap(err)
			return
		}
		readErr <- nil
	}()

	// Workers: convert, check, identity (unscaled), scale.
	parts := make([]*idBuilder, workers)
	var wg sync.WaitGroup
	for k := range workers {
		parts[k] = newIDBuilder(sides...)
		parts[k].keep = true
		wg.Add(1)
		go func(b *idBuilder) {
			defer wg.Done()
			sw := newStreamWorker(p, cols, scale, b)
			if sink.raw != nil {
				sw.scale = 1 // the floats are not kept: only their identity
			}
			for blk := range work {
				if ctx.Err() == nil {
					blk.err = sw.block(blk)
				}
				blk.ready <- struct{}{}
			}
		}(parts[k])
	}

	// Hash the digests and emit the rows in order.
	sh := newContentHash(ds, n, cols, hashView{scale: scale})
	rows := 0
	var failed error
	for b := range order {
		<-b.ready
		switch {
		case failed != nil:
		case b.err != nil:
			failed = b.err
		case ctx.Err() != nil:
			failed = ctx.Err()
		default:
			sh.Write(b.dig)
			if sink.raw != nil {
				failed = sink.raw(b.raw)
			} else {
				failed = sink.floats(b.out)
			}
			rows += b.rows
		}
		if failed != nil {
			cancel()
		}
		slots <- b
	}
	wg.Wait()
	rerr := <-readErr
	switch {
	case failed != nil && !errors.Is(failed, context.Canceled):
		return nil, nil, failed
	case rerr != nil:
		return nil, nil, rerr
	case failed != nil:
		return nil, nil, failed
	case ctx.Err() != nil:
		return nil, nil, ctx.Err()
	case rows < n:
		return nil, nil, p.wrap(errors.New("internal: incomplete stream"))
	}
	id := parts[0]
	for _, q := range parts[1:] {
		id.merge(q)
	}
	return sh, id, nil
}

// streamWorker converts blocks for one worker goroutine.
type streamWorker struct {
	cols  int
	scale float64
	conv  *blockConverter // unscaled values, for the identity
	unsc  []float64       // scratch for the unscaled values
	id    *idBuilder
	bytes *byteRounding // the sketch's rounding tables, for a source of bytes
	shape []int
}

func newStreamWorker(p *pending, cols int, scale float64, id *idBuilder) *streamWorker {
	sw := &streamWorker{cols: cols, scale: scale, conv: newBlockConverter(p.dt), id: id, shape: p.shape}
	if sw.conv.bytes {
		sw.bytes = new(byteRounding)
	}
	return sw
}

// block converts blk.raw into blk.out (scaled) and adds its rows to the
// worker's identity. Values are checked to be finite before and after
// scaling, with the messages Load gives.
func (sw *streamWorker) block(blk *streamBlock) error {
	m := blk.rows * sw.cols
	if cap(blk.out) < m {
		blk.out = make([]float64, max(m, streamBlockBytes/8))
	}
	blk.out = blk.out[:m]
	// The unscaled values go where the identity reads them: straight into
	// out when there is no scale to apply afterwards.
	u := blk.out
	if sw.scale != 1 {
		if cap(sw.unsc) < m {
			sw.unsc = make([]float64, m)
		}
		u = sw.unsc[:m]
	}
	sw.conv.convert(u, blk.raw)
	if sw.bytes == nil { // bytes are always finite
		if i := firstNonFinite(u); i >= 0 {
			return (&array{shape: sw.shape}).nonFinite(blk.row0*sw.cols+i, u[i])
		}
	}
	sw.id.digs = blk.dig[:0]
	for r := 0; r < blk.rows; r++ {
		x := u[r*sw.cols : (r+1)*sw.cols]
		if sw.bytes != nil {
			sw.id.byteRow(blk.row0+r, blk.raw[r*sw.cols:(r+1)*sw.cols], x, sw.bytes)
		} else {
			sw.id.row(blk.row0+r, x, nil)
		}
	}
	blk.dig = sw.id.digs
	if sw.scale == 1 {
		return nil
	}
	for i, v := range u {
		blk.out[i] = v * sw.scale
	}
	if sw.bytes != nil && isFinite(255*sw.scale) {
		return nil // every byte scales to a finite value
	}
	if i := firstNonFinite(blk.out); i >= 0 {
		return fmt.Errorf("value %v is not finite after scaling by %v", blk.out[i], sw.scale)
	}
	return nil
}

// merge adds the rows of q to b (the identity of the union of their rows).
func (b *idBuilder) merge(q *idBuilder) {
	parts := IdentityParts{Rows: b.rows, Sum: b.sum, Heap: b.sk.vals}
	parts.Merge(IdentityParts{Rows: q.rows, Sum: q.sum, Heap: q.sk.vals})
	b.rows, b.sum, b.sk.vals = parts.Rows, parts.Sum, parts.Heap
}
