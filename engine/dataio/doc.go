// Package dataio reads, validates, hashes, converts and hands over dplr data
// sets.
//
// # Readers
//
// Load reads a data set of one of the kinds of package data (rows, trace,
// users) from CSV, NumPy .npy or IDX (the MNIST container) files, plain or
// gzip-compressed. The format is detected from the file's magic bytes
// (gzip 1f 8b, "\x93NUMPY", the IDX 00 00 <type> <rank> prefix) and its
// extension, and LoadOptions.Format overrides the detection. Every reader
// checks shapes, dtypes, truncation and finiteness and reports problems as
// errors naming the file; none of them panics.
//
// Loading is bounded. LoadOptions.MaxBytes (default DefaultMaxBytes, half
// of physical memory) bounds the memory of the loaded values: a header
// whose shape would take more is refused before anything is allocated, and
// a CSV file is refused once its parsed values exceed it. A header may not
// claim more than the file can hold (the bytes present in a plain file;
// for a gzip file the most its compressed size can expand to, deflate's
// ratio being below 1040:1), and behind gzip buffers start small and grow
// with the data that arrives, so a lying header costs at most twice what
// the stream delivers. LoadOptions.MaxRecordBytes (default 16 MiB) bounds
// one CSV record, so an endless line (/dev/zero) fails early.
//
// Input that readers would disagree on is refused, not guessed: a .npy
// header with a duplicate key, CSV numbers with underscores ("1_000") or
// hexadecimal mantissas, user ids that are numbers not written as canonical
// integers ("1.0", "01", "+1"), and users data from a CSV file whose user
// id column is not named (by LoadOptions.UserColumn or a header column
// "user"; ErrUserColumn).
// When a row matrix is read from a C-order .npy or IDX file, the payload is
// read (and decompressed) in its own goroutine while the caller's goroutine
// converts, checks and hashes what has arrived, so the hash costs little
// extra wall time on a machine with a spare core.
//
// # Content hash
//
// A data set is identified by Hash, the lower-case hex SHA-256 of this
// canonical byte stream (all integers are unsigned 64-bit little-endian,
// all reals IEEE-754 float64 little-endian):
//
//	"dplr-dataset-v1\n"
//	kind, as its name ("rows", "trace" or "users"), then "\n"
//	n, p, d1, d2                       (d1 = d2 = 0 unless kind is trace)
//	X                                  n·p reals, row-major
//	flag, then Y if flag = 1           flag = 1 iff Y is present; n reals
//	u, then UserStart, UserIDs         u = number of users (0 if none);
//	                                   u+1 and u integers (ids as int64)
//	flag, then Labels if flag = 1      flag = 1 iff labels are present;
//	                                   n integers (as int64)
//
// The hash depends only on the content, never on the source format or file
// name: a matrix read from CSV, from a float32 .npy or from IDX hashes the
// same as long as the float64 values agree bit for bit (so -0 and +0
// differ). The data set's Name is not hashed. This hash names the content
// a plugin receives: it changes with the view (scaling, feature columns,
// header, kind). Changing the encoding requires a new version prefix.
//
// # Source identity
//
// The budget of a data set belongs to its source records, named by an
// Identity computed before any view is applied (LoadIdentity, and
// Handle.Source from PrepareFile; Handle.View records the view). A source
// row is one record of the main file with every column: for an array file
// the row of the n×p matrix (trailing axes flattened, C order, unscaled);
// for a CSV file every field of the record, fields that read as numbers as
// numbers (whatever column they are in) and other fields (text user ids) as
// text, the header line excluded (detected as
// HeaderAuto would, whatever LoadOptions.Header says, so a numeric first
// record hidden by a forced header still counts). Side files append their
// value per row, in the order responses, user ids, labels. Each row is
// encoded canonically: a number as its float64 bits little-endian, -0 as
// +0; an integer beyond 2^53 as the tag 0x7ff8000000000001 then the int64;
// text as the tag 0x7ff8000000000002, its byte length and its bytes (both
// tags are NaN patterns, which no accepted value has). With D_i the SHA-256
// of row i's encoding read as a 256-bit little-endian integer,
//
//	Identity.Hash = hex SHA-256("dplr-source-v1\n" ‖ n ‖ (Σ D_i mod 2^256))
//
// (n unsigned 64-bit little-endian, the sum as 32 bytes little-endian), so
// it does not depend on the row order, the file format, the dtype (a
// float32 copy of float32-representable values hashes the same) or the
// view, and it counts repeated rows. Identity.Sketch holds the SketchSize
// smallest distinct 64-bit hashes of the rows after rounding (main-file
// values to round(v/s·2^20) with s the row's largest magnitude, side values
// to 20 significant bits, text as is); SketchContainment compares two
// sketches to estimate the share of one source's rows present in another,
// which detects partial copies and copies edited by less than the rounding.
//
// # Data plane
//
// A Handle describes a validated, hashed data set as raw little-endian
// arrays in files (FileRef: path, byte offset, dtype, count). Prepare writes
// the canonical files of an in-memory data set into cacheDir/<hash>/;
// PrepareFile does the same for a file on disk, except that a float64,
// C-order, little-endian .npy file holding X (of rows data, of trace data
// with a response file, or of users data whose id file is already in
// increasing order) is not copied at all: it is validated and hashed in one
// streaming pass over a read-only memory map and the handle points at the
// original file. Rows data from any other C-order .npy or IDX file (plain
// or gzip) is streamed into the cache without being held in memory: blocks
// of whole rows are decompressed by one goroutine, converted, added to the
// source identity and scaled by parallel workers, and hashed and written in
// order, so the file is read once and the host's memory stays a few MiB.
// Open memory-maps X read-only
// and wraps it in a *mat.Dense without copying, so a plugin on the same
// machine reads the data in place. Handles are plain JSON-serialisable
// values meant to cross the plugin boundary (MarshalHandle, ParseHandle).
// PrepareFile records each handle under cacheDir/files/, keyed by the
// input file's path and state and the load options, so that preparing the
// same unchanged input again costs a few system calls.
//
// Cache layout: cacheDir/<hash>/{x.f8, y.f8, user_start.i8, user_ids.i8,
// labels.i8, handle.json} (raw little-endian arrays; the optional ones only
// when present; handle.json describes the content, without a source) and
// cacheDir/files/<key>.json (the full handle of one file read one way).
// PrepareFile bounds the cache to LoadOptions.CacheMaxBytes (default
// DefaultCacheMaxBytes, physical memory): it refuses a data set larger
// than that and evicts the least recently used entries (an entry's
// directory modification time records its last use) beyond it, sparing
// entries used in the last two minutes; CacheList
// and CacheClear list and empty a cache directory.
//
// # Writers
//
// WriteNPY and friends write float64 C-order and int64 .npy files.
package dataio
