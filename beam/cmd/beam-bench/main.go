// Command beam-bench measures the Beam rows pass a fit runs against the
// same pass run on one machine, at several n with p = 784: on the
// embedded prism runner, the description pipeline (stats.Describe: shape
// and source identity, what the host asks before it reserves budget) and
// then the clipped second-moment pass as `dplr-beam pass` runs it: reading
// each shard only in the state the description recorded (stats.StatePass)
// where it recorded one, else with the identity of what it read
// (stats.DescribedPass), of a rows.centred_moment request, clip c, no
// center (the pass pca-analyze-gauss with center=none sends), against the
// single-machine reference (dataio.LoadIdentity and the same request run
// in process by pass.Run, what a local fit does). It reports throughput
// (rows/s), CPU time and peak resident memory, each cell in its own
// process, the two paths interleaved round by round (the order alternating),
// with the load average before and after every cell, and after the first
// round of each pair it compares the two results (record count, every
// output and scalar, source identity).
//
// Data: Gaussian rows (norm ≈ 1.2, so the clip c = 1 bites) written as one
// .npy file, read by the single-machine path, and as .npy shards of
// -shard-rows rows, read by the pipeline (-shard-rows 0: the pipeline
// reads the one file, in ranges of rows); both deleted afterwards. The
// rows are no longer generated inside the pipeline: a fit's pass reads
// files, so the bench does too. -fmnist adds the Fashion-MNIST training
// images (IDX, gzip, scaled by 1/255, clip 10), read by both paths.
//
//	go run ./cmd/beam-bench [-n 100000,1000000] [-p 784] [-shard-rows 10000]
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

	"github.com/dplr/dplr/beam/stats"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/pass"
)

const (
	// blockRows is the generator's block (the same rows for every n and
	// sharding).
	blockRows = 10000
	// clip is the per-row bound of the generated rows (norms ≈ 1.2).
	clip = 1.0
	// fmnistClip is the per-row bound of the Fashion-MNIST cells (pixels in
	// [0, 1]; row norms are about 5 to 20, so many rows are clipped).
	fmnistClip  = 10.0
	fmnistScale = 1.0 / 255
)

func main() {
	beam.Init()
	ns := flag.String("n", "100000,1000000", "row counts (10000000 runs the Beam path alone: see -single-max)")
	p := flag.Int("p", 784, "columns")
	shardRows := flag.Int("shard-rows", 10000, "rows per .npy shard the pipeline reads (0: it reads the one file)")
	singleMax := flag.Int("single-max", 1000000, "largest n run on the single-machine path (n·p·8 bytes must fit in memory)")
	rounds := flag.Int("rounds", 1, "rounds of each compared pair")
	fmnist := flag.String("fmnist", "", "Fashion-MNIST training images (IDX) to compare on, e.g. /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")
	dir := flag.String("dir", "", "scratch directory for the generated files (default a temporary one)")
	out := flag.String("out", "", "append the results to this file")
	cell := flag.String("cell", "", "internal: run one cell")
	dataArg := flag.String("data", "", "internal: the cell's data")
	statsOut := flag.String("stats", "", "internal: write the cell's result here")
	flag.Parse()
	if *cell != "" {
		if err := runCell(*cell, *dataArg, *statsOut); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if *shardRows < 0 {
		fmt.Fprintln(os.Stderr, "beam-bench: -shard-rows must be non-negative")
		os.Exit(2)
	}
	b := &bencher{p: *p, out: *out, dir: *dir, rounds: max(1, *rounds), shardRows: *shardRows}
	if err := b.run(*ns, *singleMax, *fmnist); err != nil {
		fmt.Fprintln(os.Stderr, "beam-bench:", err)
		os.Exit(1)
	}
}

// cellResult is what a cell computed, for the equality check.
type cellResult struct {
	Res  *data.PassResult
	Hash string
}

// synthRows fills x (m×p) with block k's rows: the same values for every
// n (block k of a larger n is block k of a smaller).
func synthRows(x []float64, k, p int) {
	r := rand.New(rand.NewPCG(uint64(k), 784))
	s := 1.2 / math.Sqrt(float64(p))
	for i := range x {
		x[i] = r.NormFloat64() * s
	}
}

// request is the pass both paths run: the clipped second moment about 0.
func request(sh *data.Remote, c float64) data.PassRequest {
	return pass.RowsCentredMomentKind.EncodeRequest(sh, pass.CentredMomentRequest{Clip: c})
}

// runCell runs one path ("beam" or "single", "-fmnist" for the
// Fashion-MNIST scale and clip) on the data and prints "rows seconds".
func runCell(kind, path, statsOut string) error {
	ctx := context.Background()
	t0 := time.Now()
	scale, c := 0.0, clip
	if strings.HasSuffix(kind, "-fmnist") {
		scale, c = fmnistScale, fmnistClip
	}
	var cr cellResult
	switch strings.TrimSuffix(kind, "-fmnist") {
	case "beam":
		ro := stats.ReadOptions{Scale: scale}
		opt := stats.Options{Read: ro}
		desc, err := stats.Describe(ctx, path, data.Rows, 0, 0, opt)
		if err != nil {
			return err
		}
		sh := desc.Remote()
		cr.Hash = desc.Identity.Identity().Hash
		if desc.Files != nil {
			cr.Res, err = stats.StatePass(ctx, path, sh, ro, request(sh, c), desc.Files, opt)
			if err != nil {
				return err
			}
			break
		}
		res, got, err := stats.DescribedPass(ctx, path, sh, ro, request(sh, c), 0, 0, opt)
		if err != nil {
			return err
		}
		cr.Res = res
		if h := got.Identity.Identity().Hash; cr.Hash != h {
			return fmt.Errorf("the pass read data of identity %s, described %s", h, cr.Hash)
		}
	case "single":
		ds, id, err := dataio.LoadIdentity(path, dataio.LoadOptions{Scale: scale})
		if err != nil {
			return err
		}
		res, err := pass.Run(ctx, ds, request(pass.ShapeOf(ds), c))
		if err != nil {
			return err
		}
		cr = cellResult{res, id.Hash}
	default:
		return fmt.Errorf("cell %q", kind)
	}
	secs := time.Since(t0).Seconds()
	if statsOut != "" {
		f, err := os.Create(statsOut)
		if err != nil {
			return err
		}
		if err := gob.NewEncoder(f).Encode(cr); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	fmt.Printf("%d %.3f\n", cr.Res.Records, secs)
	return nil
}

// bencher runs cells and writes the table.
type bencher struct {
	p, rounds, shardRows int
	out, dir, self, tmp  string
}

// result is one cell's measurement.
type result struct {
	rows         int64
	secs, cpu    float64
	rssMiB       float64
	load0, load1 string
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

// cell runs one cell in its own process and writes its line.
func (b *bencher) cell(label, kind, path, statsOut string) error {
	r := result{load0: loadavg()}
	cmd := exec.Command(b.self, "-cell", kind, "-data", path, "-stats", statsOut)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s %s: %w", kind, path, err)
	}
	if _, err := fmt.Sscan(string(out), &r.rows, &r.secs); err != nil {
		return fmt.Errorf("%s %s: output %q", kind, path, out)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	r.rssMiB = float64(ru.Maxrss) / 1024
	r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	r.load1 = loadavg()
	name := map[bool]string{true: "beam (prism)", false: "single machine"}[strings.HasPrefix(kind, "beam")]
	return b.emit(fmt.Sprintf("| %s | %d | %s | %.1f | %.0f | %.1f | %.0f | %s → %s |\n",
		label, b.p, name, r.secs, float64(r.rows)/r.secs, r.cpu, r.rssMiB, r.load0, r.load1))
}

// compare reports the relative differences of two cells' results.
func compare(a, b string) (string, error) {
	var x, y cellResult
	for _, c := range []struct {
		path string
		v    *cellResult
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
	if x.Res.Records != y.Res.Records || len(x.Res.Outputs) != len(y.Res.Outputs) {
		return fmt.Sprintf("**differ**: %d vs %d rows", x.Res.Records, y.Res.Records), nil
	}
	rel := func(u, v []float64) float64 {
		var num, den float64
		for i := range u {
			num += (u[i] - v[i]) * (u[i] - v[i])
			den += v[i] * v[i]
		}
		return math.Sqrt(num / den)
	}
	var s strings.Builder
	s.WriteString("same n")
	for i, o := range y.Res.Outputs {
		fmt.Fprintf(&s, "; %s rel. diff (Frobenius) %.1e", o.Name, rel(x.Res.Outputs[i].Data, o.Data))
	}
	for name, v := range y.Res.Scalars {
		fmt.Fprintf(&s, "; %s %v vs %v", name, x.Res.Scalars[name], v)
	}
	fmt.Fprintf(&s, "; source identity %s", map[bool]string{true: "equal", false: "**differs**"}[x.Hash == y.Hash])
	return s.String(), nil
}

func (b *bencher) run(nsArg string, singleMax int, fmnist string) error {
	var err error
	if b.self, err = os.Executable(); err != nil {
		return err
	}
	if b.tmp, err = os.MkdirTemp("", "beam-bench-stats-*"); err != nil {
		return err
	}
	defer os.RemoveAll(b.tmp)
	host, _ := os.Hostname()
	if err := b.emit(fmt.Sprintf("\nRun %s UTC on %s, shards of %d rows (0: one file), %d round(s), GOMAXPROCS default:\n\n"+
		"| n | p | path | wall s | rows/s | CPU s | peak RSS (MiB) | load 1-min (start → end) |\n|---|---:|---|---:|---:|---:|---:|---|\n",
		time.Now().UTC().Format("2006-01-02 15:04"), host, b.shardRows, b.rounds)); err != nil {
		return err
	}
	var notes []string
	if fmnist != "" {
		note, err := b.pair("Fashion-MNIST 60000", fmnist, fmnist, "-fmnist")
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
		note, err := b.size(n, singleMax)
		if err != nil {
			return err
		}
		notes = append(notes, fmt.Sprintf("n = %d: %s", n, note))
	}
	var tail strings.Builder
	tail.WriteString("\n")
	for _, n := range notes {
		tail.WriteString("- " + n + "\n")
	}
	return b.emit(tail.String())
}

// size generates the files of one n and runs its cells.
func (b *bencher) size(n, singleMax int) (string, error) {
	dir := b.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "beam-bench-*")
		if err != nil {
			return "", err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	sdir := filepath.Join(dir, fmt.Sprintf("n%d", n))
	whole := filepath.Join(dir, fmt.Sprintf("whole-%d.npy", n))
	defer os.RemoveAll(sdir)
	defer os.Remove(whole)
	fmt.Fprintf(os.Stderr, "generating %d×%d rows ...\n", n, b.p)
	if err := b.generate(sdir, whole, n); err != nil {
		return "", err
	}
	shards := filepath.Join(sdir, "*.npy")
	if b.shardRows == 0 {
		shards = whole
	}
	label := strconv.Itoa(n)
	if n > singleMax {
		return fmt.Sprintf("single machine not run: the n×p float64 matrix alone takes %.0f GB", float64(n)*float64(b.p)*8/1e9),
			b.cell(label, "beam", shards, "")
	}
	return b.pair(label, whole, shards, "")
}

// pair runs the single-machine and Beam cells of one data set, interleaved
// (the order alternating by round), and compares their results.
func (b *bencher) pair(label, whole, shards, suffix string) (string, error) {
	var note string
	for r := range b.rounds {
		kinds := []string{"single", "beam"}
		if r%2 == 1 {
			kinds[0], kinds[1] = kinds[1], kinds[0]
		}
		files := map[string]string{}
		for _, kind := range kinds {
			path := whole
			if kind == "beam" {
				path = shards
			}
			files[kind] = filepath.Join(b.tmp, kind+".gob")
			if err := b.cell(label, kind+suffix, path, files[kind]); err != nil {
				return "", err
			}
		}
		if r == 0 {
			var err error
			if note, err = compare(files["beam"], files["single"]); err != nil {
				return "", err
			}
		}
	}
	return note, nil
}

// generate writes n×p generated rows as one file and, unless the pipeline
// reads that file, as shards of shardRows rows, one block in memory at a
// time.
func (b *bencher) generate(sdir, whole string, n int) error {
	p := b.p
	if err := os.MkdirAll(sdir, 0o755); err != nil {
		return err
	}
	w, err := newNPY(whole, n, p)
	if err != nil {
		return err
	}
	var shard *npyFile
	done, blk := 0, make([]float64, blockRows*p)
	for k := 0; k*blockRows < n; k++ {
		rest := blk[:min(blockRows, n-k*blockRows)*p]
		synthRows(rest, k, p)
		if err := w.write(rest); err != nil {
			return err
		}
		for b.shardRows > 0 && len(rest) > 0 {
			if shard == nil || shard.left == 0 {
				if err := shard.close(); err != nil {
					return err
				}
				name := filepath.Join(sdir, fmt.Sprintf("shard-%05d.npy", done/b.shardRows))
				if shard, err = newNPY(name, min(b.shardRows, n-done), p); err != nil {
					return err
				}
			}
			m := min(shard.left, len(rest)/p)
			if err := shard.write(rest[:m*p]); err != nil {
				return err
			}
			rest, done = rest[m*p:], done+m
		}
	}
	if err := shard.close(); err != nil {
		return err
	}
	return w.close()
}
