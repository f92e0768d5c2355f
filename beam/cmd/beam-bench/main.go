// Command beam-bench measures the rows statistics (count, clipped sum,
// clipped second moment, source identity) computed on Beam — the
// description pipeline (source identity) and a per-row combine of the
// clipped moments (stats.Rows; fits now take stats.ShardPass over row
// ranges, which bench/results/beam-split.sh measures) — on the embedded prism runner
// against the single-machine path (one
// matrix in memory, second moment by pca.Gram), at several n with
// p = 784: throughput (rows/s), CPU time and peak resident memory, each
// cell in its own process, the compared paths interleaved round by round,
// with the load average before and after every cell.
//
// Sources (-source): "synthetic" generates Gaussian rows inside the
// pipeline (a DoFn per block of 10 000 rows; nothing is written to disk;
// no source identity: generated rows have no source to describe), and the
// single-machine path generates the same rows into one in-memory matrix; "files" writes .npy shards of 10 000 rows plus one whole .npy,
// read by the pipeline and by dataio.LoadIdentity (deleted afterwards).
// -fmnist adds the Fashion-MNIST training images (IDX, gzip, scaled by
// 1/255), read by the same reader on both paths, and checks that the two
// paths' statistics agree.
//
//	go run ./cmd/beam-bench [-n 100000,1000000] [-p 784] [-source synthetic|files]
//	    [-single-max 1000000] [-rounds 1] [-fmnist PATH] [-out ../bench/results/beam.md]
package main

import (
	"context"
	"encoding/gob"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/beam/stats"
	dplrdata "github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/plugins/pca"
)

const (
	shardRows = 10000
	// clip is the per-row bound of the synthetic cells (rows have norm ≈ 1.2).
	clip = 1.0
	// fmnistClip is the per-row bound of the Fashion-MNIST cells (pixels in
	// [0, 1]; row norms are about 5 to 20, so many rows are clipped).
	fmnistClip  = 10.0
	fmnistScale = 1.0 / 255
)

func init() {
	register.DoFn2x1[int, func(stats.ClippedRow), error](&genFn{})
}

func main() {
	beam.Init()
	ns := flag.String("n", "100000,1000000", "row counts (10000000 runs the Beam path alone: see -single-max)")
	p := flag.Int("p", 784, "columns")
	source := flag.String("source", "synthetic", "synthetic (generated in the pipeline) or files (.npy shards on disk)")
	singleMax := flag.Int("single-max", 1000000, "largest n run on the single-machine path (n·p·8 bytes must fit in memory)")
	rounds := flag.Int("rounds", 1, "rounds of each compared pair (medians reported)")
	fmnist := flag.String("fmnist", "", "Fashion-MNIST training images (IDX) to compare on, e.g. /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")
	dir := flag.String("dir", "", "scratch directory for -source files (default a temporary one)")
	out := flag.String("out", "", "append the results to this file")
	cell := flag.String("cell", "", "internal: run one cell")
	dataArg := flag.String("data", "", "internal: the cell's data")
	statsOut := flag.String("stats", "", "internal: write the cell's statistics here")
	flag.Parse()
	if *cell != "" {
		if err := runCell(*cell, *dataArg, *p, *statsOut); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	b := &bencher{p: *p, out: *out, dir: *dir, rounds: max(1, *rounds)}
	if err := b.run(*ns, *source, *singleMax, *fmnist); err != nil {
		fmt.Fprintln(os.Stderr, "beam-bench:", err)
		os.Exit(1)
	}
}

// cellStats is what a cell computed, for the equality check.
type cellStats struct {
	N      int64
	Sum    []float64
	Moment []float64 // full p×p, divided by N
	Hash   string
}

// synthRows fills x (m×p) with block k's rows: the same values on both
// paths and for every n (block k of a larger n is block k of a smaller).
func synthRows(x []float64, k, p int) {
	r := rand.New(rand.NewPCG(uint64(k), 784))
	s := 1.2 / math.Sqrt(float64(p))
	for i := range x {
		x[i] = r.NormFloat64() * s
	}
}

// genFn is the pipeline's synthetic source: block k of shardRows rows.
type genFn struct {
	P, N int
}

// ProcessElement emits block k's rows, clipped.
func (f *genFn) ProcessElement(k int, emit func(stats.ClippedRow)) error {
	m := min(shardRows, f.N-k*shardRows)
	x := make([]float64, m*f.P)
	synthRows(x, k, f.P)
	for i := range m {
		r, err := stats.NewClippedRow(x[i*f.P:(i+1)*f.P], 1, clip)
		if err != nil {
			return err
		}
		emit(r)
	}
	return nil
}

// runCell computes the statistics one way and prints "rows seconds".
func runCell(kind, data string, p int, statsOut string) error {
	ctx := context.Background()
	t0 := time.Now()
	var cs cellStats
	switch kind {
	case "beam-synth":
		n, err := strconv.Atoi(data)
		if err != nil {
			return err
		}
		blocks := make([]int, (n+shardRows-1)/shardRows)
		for k := range blocks {
			blocks[k] = k
		}
		st, err := stats.RunRows(ctx, p, func(s beam.Scope) beam.PCollection {
			rows := beam.ParDo(s, &genFn{P: p, N: n}, beam.Reshuffle(s, beam.CreateList(s, blocks)))
			return stats.CombineRows(s, rows, p)
		}, stats.Options{})
		if err != nil {
			return err
		}
		cs = fromRowStats(st)
	case "beam-file", "beam-fmnist":
		ro := stats.ReadOptions{}
		c := clip
		if kind == "beam-fmnist" {
			ro.Scale, c = fmnistScale, fmnistClip
		}
		opt := stats.Options{Read: ro}
		desc, err := stats.Describe(ctx, data, dplrdata.Rows, 0, 0, opt)
		if err != nil {
			return err
		}
		paths, err := stats.Expand(ctx, data)
		if err != nil {
			return err
		}
		st, err := stats.RunRows(ctx, desc.P, func(s beam.Scope) beam.PCollection {
			return stats.Rows(s, beam.CreateList(s, paths), desc.P, c, ro)
		}, opt)
		if err != nil {
			return err
		}
		cs = fromRowStats(st)
		cs.Hash = desc.Identity.Identity().Hash
	case "single-synth":
		n, err := strconv.Atoi(data)
		if err != nil {
			return err
		}
		x := make([]float64, n*p)
		var id dataio.IdentityParts
		for k := 0; k*shardRows < n; k++ {
			blk := x[k*shardRows*p : min(n, (k+1)*shardRows)*p]
			synthRows(blk, k, p)
		}
		for i := range n {
			id.AddRow(x[i*p : (i+1)*p])
		}
		if cs, err = single(ctx, mat.NewDense(n, p, x), clip); err != nil {
			return err
		}
		cs.Hash = id.Identity().Hash
	case "single-file", "single-fmnist":
		lo := dataio.LoadOptions{}
		c := clip
		if kind == "single-fmnist" {
			lo.Scale, c = fmnistScale, fmnistClip
		}
		ds, id, err := dataio.LoadIdentity(data, lo)
		if err != nil {
			return err
		}
		if cs, err = single(ctx, ds.X, c); err != nil {
			return err
		}
		cs.Hash = id.Hash
	default:
		return fmt.Errorf("cell %q", kind)
	}
	secs := time.Since(t0).Seconds()
	if statsOut != "" {
		f, err := os.Create(statsOut)
		if err != nil {
			return err
		}
		if err := gob.NewEncoder(f).Encode(cs); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	fmt.Printf("%d %.3f\n", cs.N, secs)
	return nil
}

// single is the single-machine path on x: pca.Gram (the plugin's kernel)
// and the clipped sum.
func single(ctx context.Context, x *mat.Dense, c float64) (cellStats, error) {
	g, _, err := pca.Gram(ctx, backend.Default(), x, nil, c)
	if err != nil {
		return cellStats{}, err
	}
	n, p := x.Dims()
	sum, err := kernel.ClippedSum(ctx, x, c)
	if err != nil {
		return cellStats{}, err
	}
	m := make([]float64, p*p)
	for i := range p {
		for j := range p {
			m[i*p+j] = g.At(i, j)
		}
	}
	return cellStats{N: int64(n), Sum: sum, Moment: m}, nil
}

func fromRowStats(st *stats.RowStats) cellStats {
	p := st.P
	m := make([]float64, p*p)
	for i := range p {
		for j := i; j < p; j++ {
			v := st.Moment[i*p+j] / float64(st.N)
			m[i*p+j], m[j*p+i] = v, v
		}
	}
	return cellStats{N: st.N, Sum: st.Sum, Moment: m}
}

// bencher runs cells and writes the table.
type bencher struct {
	p      int
	out    string
	dir    string
	rounds int
	self   string
	tmp    string
}

// result is one cell's measurement.
type result struct {
	rows      int64
	secs, cpu float64
	rssMiB    float64
	load0     string
	load1     string
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

func (b *bencher) emit(s string) error {
	fmt.Fprint(os.Stderr, s)
	if b.out == "" {
		return nil
	}
	f, err := os.OpenFile(b.out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// cell runs one cell in its own process.
func (b *bencher) cell(kind, data, statsOut string) (result, error) {
	r := result{load0: loadavg()}
	cmd := exec.Command(b.self, "-cell", kind, "-data", data, "-p", strconv.Itoa(b.p), "-stats", statsOut)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return r, fmt.Errorf("%s %s: %w", kind, data, err)
	}
	if _, err := fmt.Sscan(string(out), &r.rows, &r.secs); err != nil {
		return r, fmt.Errorf("%s %s: output %q", kind, data, out)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	r.rssMiB = float64(ru.Maxrss) / 1024
	r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	r.load1 = loadavg()
	return r, nil
}

func (b *bencher) line(label string, p int, path string, r result) error {
	return b.emit(fmt.Sprintf("| %s | %d | %s | %.1f | %.0f | %.1f | %.0f | %s → %s |\n",
		label, p, path, r.secs, float64(r.rows)/r.secs, r.cpu, r.rssMiB, r.load0, r.load1))
}

// compare reports the relative differences of two cells' statistics.
func compare(a, b string) (string, error) {
	var x, y cellStats
	for _, c := range []struct {
		path string
		v    *cellStats
	}{{a, &x}, {b, &y}} {
		f, err := os.Open(c.path)
		if err != nil {
			return "", err
		}
		err = gob.NewDecoder(f).Decode(c.v)
		f.Close()
		if err != nil {
			return "", err
		}
	}
	rel := func(u, v []float64) float64 {
		var num, den float64
		for i := range u {
			num += (u[i] - v[i]) * (u[i] - v[i])
			den += v[i] * v[i]
		}
		return math.Sqrt(num / den)
	}
	if x.N != y.N || len(x.Sum) != len(y.Sum) {
		return fmt.Sprintf("**differ**: %d vs %d rows", x.N, y.N), nil
	}
	id := map[bool]string{true: "equal", false: "**differs**"}[x.Hash == y.Hash]
	if x.Hash == "" || y.Hash == "" {
		id = "not compared (generated rows)"
	}
	return fmt.Sprintf("same n; clipped sum rel. diff %.1e; second moment rel. diff (Frobenius) %.1e; source identity %s",
		rel(x.Sum, y.Sum), rel(x.Moment, y.Moment), id), nil
}

func (b *bencher) run(nsArg, source string, singleMax int, fmnist string) error {
	var err error
	if b.self, err = os.Executable(); err != nil {
		return err
	}
	if b.tmp, err = os.MkdirTemp("", "beam-bench-stats-*"); err != nil {
		return err
	}
	defer os.RemoveAll(b.tmp)
	host, _ := os.Hostname()
	if err := b.emit(fmt.Sprintf("\nRun %s UTC on %s, source %s, %d round(s), GOMAXPROCS default:\n\n"+
		"| n | p | path | wall s | rows/s | CPU s | peak RSS (MiB) | load 1-min (start → end) |\n|---|---:|---|---:|---:|---:|---:|---|\n",
		time.Now().UTC().Format("2006-01-02 15:04"), host, source, b.rounds)); err != nil {
		return err
	}
	var notes []string
	if fmnist != "" {
		note, err := b.pair("Fashion-MNIST 60000", fmnist, fmnist, "single-fmnist", "beam-fmnist")
		if err != nil {
			return err
		}
		notes = append(notes, "Fashion-MNIST: "+note)
	}
	for _, s := range strings.Split(nsArg, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		note, err := b.size(n, source, singleMax)
		if err != nil {
			return err
		}
		if note != "" {
			notes = append(notes, fmt.Sprintf("n = %d: %s", n, note))
		}
	}
	var tail strings.Builder
	tail.WriteString("\n")
	for _, n := range notes {
		tail.WriteString("- " + n + "\n")
	}
	return b.emit(tail.String())
}

// size runs the cells of one n.
func (b *bencher) size(n int, source string, singleMax int) (string, error) {
	single, beamData, singleData := "single-synth", strconv.Itoa(n), strconv.Itoa(n)
	var cleanup func()
	if source == "files" {
		dir := b.dir
		if dir == "" {
			d, err := os.MkdirTemp("", "beam-bench-*")
			if err != nil {
				return "", err
			}
			dir = d
		}
		sdir := filepath.Join(dir, fmt.Sprintf("n%d", n))
		whole := filepath.Join(dir, fmt.Sprintf("whole-%d.npy", n))
		fmt.Fprintf(os.Stderr, "generating %d×%d rows in shards of %d ...\n", n, b.p, shardRows)
		if err := generate(sdir, whole, n, b.p); err != nil {
			return "", err
		}
		cleanup = func() { os.RemoveAll(sdir); os.Remove(whole) }
		single, beamData, singleData = "single-file", filepath.Join(sdir, "*.npy"), whole
	} else if source != "synthetic" {
		return "", fmt.Errorf("source %q: want synthetic or files", source)
	}
	if cleanup != nil {
		defer cleanup()
	}
	label := strconv.Itoa(n)
	if n > singleMax {
		r, err := b.cell("beam-"+strings.TrimPrefix(single, "single-"), beamData, "")
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("single machine not run: the n×p float64 matrix alone takes %.0f GB, above this machine's 23 GB", float64(n)*float64(b.p)*8/1e9),
			b.line(label, b.p, "beam (prism)", r)
	}
	return b.pair(label, singleData, beamData, single, "beam-"+strings.TrimPrefix(single, "single-"))
}

// pair runs the single-machine and Beam cells of one data set, interleaved
// (the order alternating by round), and compares their statistics.
func (b *bencher) pair(label, singleData, beamData, single, beamKind string) (string, error) {
	var note string
	for r := range b.rounds {
		order := []string{single, beamKind}
		if r%2 == 1 {
			order = []string{beamKind, single}
		}
		files := map[string]string{}
		for _, kind := range order {
			data := singleData
			path := "single machine"
			if kind == beamKind {
				data, path = beamData, "beam (prism)"
			}
			files[kind] = filepath.Join(b.tmp, kind+".gob")
			res, err := b.cell(kind, data, files[kind])
			if err != nil {
				return "", err
			}
			if err := b.line(label, b.p, path, res); err != nil {
				return "", err
			}
		}
		if r == 0 {
			var err error
			if note, err = compare(files[beamKind], files[single]); err != nil {
				return "", err
			}
		}
	}
	return note, nil
}

// generate writes n×p synthetic rows as shards of shardRows rows and as
// one file.
func generate(sdir, whole string, n, p int) error {
	if err := os.MkdirAll(sdir, 0o755); err != nil {
		return err
	}
	w, err := os.Create(whole)
	if err != nil {
		return err
	}
	defer w.Close()
	if err := writeHeader(w, n, p); err != nil {
		return err
	}
	buf := make([]float64, shardRows*p)
	for k := 0; k*shardRows < n; k++ {
		m := min(shardRows, n-k*shardRows)
		x := buf[:m*p]
		synthRows(x, k, p)
		if err := dataio.SaveNPYFloat64(filepath.Join(sdir, fmt.Sprintf("shard-%05d.npy", k)), []int{m, p}, x); err != nil {
			return err
		}
		if _, err := w.Write(f64bytes(x)); err != nil {
			return err
		}
	}
	return w.Close()
}
