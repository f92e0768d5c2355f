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
// errors naming the file; none of them panics, and a header that declares a
// huge shape cannot make a reader allocate more memory than the file can
// hold: the bytes present in a plain file, or, for a gzip file, the most
// its compressed size can expand to (deflate's ratio is below 1040:1).
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
// differ). The data set's Name is not hashed. The ledger identifies data
// sets by this hash; changing the encoding requires a new version prefix.
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
// original file. Open memory-maps X read-only
// and wraps it in a *mat.Dense without copying, so a plugin on the same
// machine reads the data in place. Handles are plain JSON-serialisable
// values meant to cross the plugin boundary (MarshalHandle, ParseHandle).
// PrepareFile records each handle under cacheDir/files/, keyed by the
// input file's path and state and the load options, so that preparing the
// same unchanged input again costs a few system calls.
//
// Cache layout: cacheDir/<hash>/{x.f8, y.f8, user_start.i8, user_ids.i8,
// labels.i8, handle.json} (raw little-endian arrays; the optional ones only
// when present) and cacheDir/files/<key>.json.
//
// # Writers
//
// WriteNPY and friends write float64 C-order and int64 .npy files;
// WriteJSON writes indented JSON in which NaN and ±Inf, which JSON cannot
// represent, become strings or null.
package dataio
