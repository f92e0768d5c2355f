package dataio

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplr/dplr/engine/data"
)

// checkArray asserts the invariants of a successfully decoded array.
func checkArray(t *testing.T, a *array) {
	count, err := shapeCount(a.shape, a.dt.size)
	if err != nil {
		t.Fatalf("decoded an array with a bad shape %v: %v", a.shape, err)
	}
	if int64(len(a.raw)) != count*int64(a.dt.size) {
		t.Fatalf("shape %v %s: %d raw bytes", a.shape, a.dt, len(a.raw))
	}
	v, err := a.float64s()
	if err == nil {
		if int64(len(v)) != count {
			t.Fatalf("%d values for shape %v", len(v), a.shape)
		}
		if i := firstNonFinite(v); i >= 0 {
			t.Fatalf("non-finite value %v accepted", v[i])
		}
	}
	if a.dt.integer() {
		if iv, err := a.int64s(); err == nil && int64(len(iv)) != count {
			t.Fatalf("%d ints for shape %v", len(iv), a.shape)
		}
	}
}

// checkStreamed asserts that the streaming decoder agrees with the plain
// one: both fail, or both succeed with bit-identical values.
func checkStreamed(t *testing.T, b []byte, header func(io.Reader, int64, int64) (*pending, error)) {
	p, err := header(bytes.NewReader(b), int64(len(b)), -1)
	if err != nil || !p.streamable() {
		return
	}
	n, cols, err := matrixShape(p.shape)
	if err != nil || n == 0 || cols == 0 {
		return
	}
	p.r = bytes.NewReader(b[len(b)-int(p.known):])
	var got []float64
	var chunks int
	_, _, serr := streamRows(context.Background(), p, &data.Dataset{Kind: data.Rows}, n, cols, 0.5, nil, rowSink{floats: func(c []float64) error {
		chunks++
		got = append(got, c...)
		return nil
	}})
	q, err := header(bytes.NewReader(b), int64(len(b)), -1)
	if err != nil {
		t.Fatalf("header decodes once but not twice: %v", err)
	}
	a, err := q.read()
	var want []float64
	if err == nil {
		want, err = a.float64s()
		for i := range want {
			want[i] *= 0.5
		}
	}
	if (err == nil) != (serr == nil) {
		t.Fatalf("plain decoder error %v, streaming decoder error %v", err, serr)
	}
	if err != nil {
		return
	}
	if len(got) != len(want) || (chunks == 0) != (len(want) == 0) {
		t.Fatalf("streamed %d values (in %d blocks), plain %d", len(got), chunks, len(want))
	}
	for i := range got {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Fatalf("value %d: streamed %v, plain %v", i, got[i], want[i])
		}
	}
}

// fuzzSeeds are the in-code seeds; testdata/fuzz holds more.
func npySeeds() [][]byte {
	le := binary.LittleEndian
	return [][]byte{
		npyFile(1, "<f8", false, []int{2, 2}, encode(le, []float64{1, 2, 3, 4})),
		npyFile(2, "<f4", true, []int{2, 3}, encode(le, f32s(seq(6, 1, 0)))),
		npyFile(1, "|u1", false, []int{3}, []byte{1, 2, 3}),
		npyFile(1, ">i8", false, []int{1, 1, 2}, encode(binary.BigEndian, []int64{-1, 5})),
		npyFile(1, "<f8", false, []int{1 << 30, 1 << 20}, nil),
	}
}

func idxSeeds() [][]byte {
	return [][]byte{
		idxFile(0x08, []int{2, 2, 2}, []byte{1, 2, 3, 4, 5, 6, 7, 8}),
		idxFile(0x08, []int{3}, []byte{9, 0, 1}),
		idxFile(0x0D, []int{1, 2}, encode(binary.BigEndian, []float32{1.5, -2})),
		idxFile(0x0E, []int{1, 1}, encode(binary.BigEndian, []float64{math.Pi})),
		idxFile(0x0C, []int{60000, 28, 28}, []byte{1, 2, 3}),
	}
}

func csvSeeds() []string {
	return []string{
		"1,2\n3,4\n",
		"a,b\n1,2\n",
		"# x,y\n1e3,-2\n",
		"user,x,y\n1,2,3\nbob,4,5\n",
		"1,\"2\"\n3,4\n",
		"1,2\n3\n",
		"nan,inf\n",
	}
}

// FuzzNPY feeds arbitrary bytes to the .npy decoder, with the file size
// known (as for a plain file) and unknown (as behind gzip).
func FuzzNPY(f *testing.F) {
	for _, s := range npySeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, known := range []int64{int64(len(b)), -1} {
			a, err := decodeWhole(decodeNPYHeader, bytes.NewReader(b), known)
			if err == nil {
				checkArray(t, a)
			}
		}
		checkStreamed(t, b, decodeNPYHeader)
	})
}

// FuzzIDX feeds arbitrary bytes to the IDX decoder.
func FuzzIDX(f *testing.F) {
	for _, s := range idxSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, known := range []int64{int64(len(b)), -1} {
			a, err := decodeWhole(decodeIDXHeader, bytes.NewReader(b), known)
			if err == nil {
				checkArray(t, a)
			}
		}
		checkStreamed(t, b, decodeIDXHeader)
	})
}

// FuzzCSV feeds arbitrary text to the CSV reader in each header mode, with
// the first column kept as text (as for user ids) or not.
func FuzzCSV(f *testing.F) {
	for _, s := range csvSeeds() {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, s string, mode uint8) {
		cfg := csvConfig{header: []HeaderMode{HeaderAuto, HeaderYes, HeaderNo}[mode%3]}
		if mode&4 != 0 {
			cfg.textCols = func([]string, int) ([]int, error) { return []int{0}, nil }
		}
		if mode&8 != 0 {
			cfg.delim = ';'
		}
		tb, err := readCSV(strings.NewReader(s), cfg)
		if err != nil {
			return
		}
		if tb.nrow < 1 || tb.ncol < 1 || len(tb.vals) != tb.nrow*tb.ncol {
			t.Fatalf("inconsistent table: %d×%d with %d values", tb.nrow, tb.ncol, len(tb.vals))
		}
		if tb.header != nil && len(tb.header) != tb.ncol {
			t.Fatalf("%d header names for %d columns", len(tb.header), tb.ncol)
		}
		if i := firstNonFinite(tb.vals); i >= 0 {
			t.Fatalf("non-finite value accepted")
		}
		for c, col := range tb.text {
			if len(col) != tb.nrow {
				t.Fatalf("text column %d has %d values for %d rows", c, len(col), tb.nrow)
			}
		}
	})
}

// FuzzGzip feeds arbitrary bytes through format detection and gzip
// unwrapping to the matching decoder, as Load does for a file.
func FuzzGzip(f *testing.F) {
	for _, s := range npySeeds()[:2] {
		f.Add(gz(s), "a.npy.gz")
	}
	for _, s := range idxSeeds()[:2] {
		f.Add(gz(s), "train-images-idx3-ubyte.gz")
	}
	f.Add(gz([]byte("1,2\n3,4\n")), "a.csv.gz")
	f.Add(gz([]byte("1,2\n"))[:12], "a.csv.gz")
	f.Fuzz(func(t *testing.T, b []byte, name string) {
		src, err := openReader(bytes.NewReader(b), int64(len(b)), name, FormatAuto)
		if err != nil {
			return
		}
		defer src.Close()
		l, err := decodeSource(src, name, csvConfig{})
		if err != nil {
			return
		}
		if l.arr != nil {
			checkArray(t, l.arr)
		}
	})
}

// TestWriteFuzzSeeds regenerates the committed seed corpora under
// testdata/fuzz when DPLR_WRITE_FUZZ_SEEDS=1.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("DPLR_WRITE_FUZZ_SEEDS") != "1" {
		t.Skip("set DPLR_WRITE_FUZZ_SEEDS=1 to regenerate testdata/fuzz")
	}
	write := func(target string, i int, args ...string) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		body := "go test fuzz v1\n" + strings.Join(args, "\n") + "\n"
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bytesArg := func(b []byte) string { return fmt.Sprintf("[]byte(%q)", b) }
	le := binary.LittleEndian
	npy := append(npySeeds(),
		npyFile(3, "<f8", false, []int{1, 2}, encode(le, []float64{1, 2})),
		npyFile(1, "<f8", false, []int{2, 2}, encode(le, []float64{1, 2, 3, math.NaN()})),
		npyFile(1, "<u8", true, []int{2, 1}, encode(le, []uint64{1 << 63, 2})),
		[]byte(npyMagic+"\x01\x00\xff\xff"),
	)
	for i, s := range npy {
		write("FuzzNPY", i, bytesArg(s))
	}
	idx := append(idxSeeds(),
		idxFile(0x09, []int{2, 1, 2}, []byte{0xff, 0, 1, 0x80}),
		idxFile(0x0B, []int{2}, encode(binary.BigEndian, []int16{-3, 4})),
		[]byte{0, 0, 8, 0},
	)
	for i, s := range idx {
		write("FuzzIDX", i, bytesArg(s))
	}
	for i, s := range append(csvSeeds(), "id;y\nx;1\n", "\"a\nb\",c\n1,2\n", "1e999,2\n") {
		write("FuzzCSV", i, fmt.Sprintf("string(%q)", s), fmt.Sprintf("byte(%d)", (i*5)%16))
	}
	gzs := []struct {
		b    []byte
		name string
	}{
		{gz(npy[0]), "a.npy.gz"},
		{gz(idx[0]), "x-idx3-ubyte.gz"},
		{gz([]byte("a,b\n1,2\n")), "a.csv.gz"},
		{gz(gz([]byte("1\n"))), "double.gz"},
		{append(gz([]byte("1,2\n")), gz([]byte("3,4\n"))...), "multi.csv.gz"},
		{gz(npy[1])[:20], "short.npy.gz"},
	}
	for i, s := range gzs {
		write("FuzzGzip", i, bytesArg(s.b), fmt.Sprintf("string(%q)", s.name))
	}
}

// FuzzIdentity checks the source identity's invariants on arbitrary CSV
// text: a table that reads has a well-formed identity, the same identity
// with its rows reversed, and a sketch fully contained in itself.
func FuzzIdentity(f *testing.F) {
	for _, s := range csvSeeds() {
		f.Add(s, uint8(0))
	}
	f.Add("user,x\nbob,-0\n7,0\n", uint8(4))
	f.Add("1,2\n1,2\n3,4\n", uint8(1))
	f.Fuzz(func(t *testing.T, s string, mode uint8) {
		cfg := csvConfig{header: []HeaderMode{HeaderAuto, HeaderYes, HeaderNo}[mode%3]}
		if mode&4 != 0 {
			cfg.textCols = func([]string, int) ([]int, error) { return []int{0}, nil }
		}
		tb, err := readCSV(strings.NewReader(s), cfg)
		if err != nil {
			return
		}
		id := tableIDBuilder(tb).finish()
		if err := id.Check(); err != nil {
			t.Fatalf("identity of a %d×%d table: %v", tb.nrow, tb.ncol, err)
		}
		want := int64(tb.nrow)
		if tb.hidden != nil {
			want++
		}
		if id.Rows != want {
			t.Fatalf("identity counts %d rows, want %d", id.Rows, want)
		}
		rev := &table{header: tb.header, ncol: tb.ncol, nrow: tb.nrow, text: map[int][]string{}, hidden: tb.hidden}
		for i := tb.nrow - 1; i >= 0; i-- {
			rev.vals = append(rev.vals, tb.vals[i*tb.ncol:(i+1)*tb.ncol]...)
		}
		for c, col := range tb.text {
			r := make([]string, len(col))
			for i := range col {
				r[len(col)-1-i] = col[i]
			}
			rev.text[c] = r
		}
		if got := tableIDBuilder(rev).finish(); got.Hash != id.Hash || len(got.Sketch) != len(id.Sketch) {
			t.Fatalf("reversing the rows changed the identity")
		}
		if c, m := SketchContainmentSample(id.Sketch, id.Sketch); c != 1 || m != len(id.Sketch) {
			t.Fatalf("a sketch contains itself with c = %v over %d of %d", c, m, len(id.Sketch))
		}
	})
}
