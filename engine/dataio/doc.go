// Package dataio reads, validates, hashes, caches and hands over dplr data
// sets.
//
// Load reads rows, trace or users data (package data) from CSV, .npy or
// IDX files, plain or gzip, within memory bounds, refusing input that
// readers would disagree on. Hash names the content a plugin receives;
// Identity names the source records a budget belongs to, whatever the view
// (scaling, columns, format, row order). PrepareFile and Prepare write a
// data set into a content-addressed cache and return a Handle, which Open
// maps read-only without copying. docs/data.md gives the exact encodings
// of the hash and the identity, the readers' bounds and the cache layout.
package dataio
