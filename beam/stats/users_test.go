package stats

import (
	"compress/gzip"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/xitongsys/parquet-go-source/local"
	"github.com/xitongsys/parquet-go/writer"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/pass"
)

type urec struct {
	id int64
	x  []float64
	y  float64
}

func usersCSV(recs []urec, d int) string {
	var b strings.Builder
	b.WriteString("user")
	for j := range d {
		fmt.Fprintf(&b, ",x%d", j)
	}
	b.WriteString(",y\n")
	for _, r := range recs {
		fmt.Fprintf(&b, "%d", r.id)
		for _, v := range r.x {
			b.WriteString("," + strconvFormat(v))
		}
		b.WriteString("," + strconvFormat(r.y) + "\n")
	}
	return b.String()
}

// usersData returns records of nu users (user 0 holds many rows with
// large values) in a shuffled order.
func usersData(nu, d int, seed uint64) []urec {
	r := rand.New(rand.NewPCG(seed, 9))
	var recs []urec
	for u := range nu {
		m := 3 + r.IntN(6)
		scale := 1.0
		if u == 0 {
			m, scale = 400, 50
		}
		for range m {
			x := make([]float64, d)
			for j := range x {
				x[j] = r.NormFloat64() * scale
			}
			recs = append(recs, urec{int64(1000 + u), x, r.NormFloat64() * scale})
		}
	}
	r.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	return recs
}

// ustatRequest is a users.ustat request over whole users (no split)
// clipping each user's term to clip.
func ustatRequest(clip float64) data.PassRequest {
	return pass.UsersUstatKind.EncodeRequest(nil, pass.UstatRequest{Clip: clip})
}

// usersMatch runs req over the shards of glob and checks that it equals
// pass.Local on the one file whole (to 1e-12 relative); it returns the
// pipeline's result.
func usersMatch(t *testing.T, glob, whole string, req data.PassRequest) *data.PassResult {
	ds, err := dataio.Load(whole, dataio.LoadOptions{Kind: data.Users})
	require.NoError(t, err)
	got, err := RunUsersPass(context.Background(), glob, pass.ShapeOf(ds), ReadOptions{}, req, Options{})
	require.NoError(t, err)
	want, err := pass.Local(ds).Pass(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, want.Records, got.Records)
	assert.Equal(t, want.Scalars, got.Scalars)
	assert.Less(t, relVec(got.Outputs[0].Data, want.Outputs[0].Data), 1e-12)
	return got
}

func relVec(a, b []float64) float64 {
	var num, den float64
	for i := range a {
		num += (a[i] - b[i]) * (a[i] - b[i])
		den += b[i] * b[i]
	}
	return math.Sqrt(num / math.Max(den, 1e-300))
}

// TestUsersMatchesSingleMachine: users split across shards are grouped,
// bounded after grouping and summed as on the one file; a user holding
// many rows moves the aggregate by at most the bound.
func TestUsersMatchesSingleMachine(t *testing.T) {
	const d, k = 5, 2
	recs := usersData(30, d, 3)
	dir := t.TempDir()
	third := len(recs) / 3
	for i, part := range [][]urec{recs[:third], recs[third : 2*third], recs[2*third:]} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("u-%d.csv", i)), []byte(usersCSV(part, d)), 0o644))
	}
	whole := filepath.Join(t.TempDir(), "whole.csv")
	require.NoError(t, os.WriteFile(whole, []byte(usersCSV(recs, d)), 0o644))
	var noBig []urec
	for _, r := range recs {
		if r.id != 1000 {
			noBig = append(noBig, r)
		}
	}
	without := filepath.Join(t.TempDir(), "without.csv")
	require.NoError(t, os.WriteFile(without, []byte(usersCSV(noBig, d)), 0o644))

	u := make([]float64, d*k)
	u[0], u[k+1] = 1, 1
	grad := pass.UsersGradientKind.EncodeRequest(&data.Remote{P: d}, pass.UsersGradientRequest{UsersModel: pass.UsersModel{U: u, Rank: k}, Clip: 2})
	for _, tc := range []struct {
		name string
		req  data.PassRequest
	}{{"initialisation", ustatRequest(2)}, {"round", grad}} {
		t.Run(tc.name, func(t *testing.T) {
			got := usersMatch(t, filepath.Join(dir, "u-*.csv"), whole, tc.req)

			// The user with 400 large rows changes the sum by ≤ the bound.
			ds, err := dataio.Load(without, dataio.LoadOptions{Kind: data.Users})
			require.NoError(t, err)
			rest, err := RunUsersPass(context.Background(), without, pass.ShapeOf(ds), ReadOptions{}, tc.req, Options{})
			require.NoError(t, err)
			var diff float64
			for i, v := range got.Outputs[0].Data {
				diff += (v - rest.Outputs[0].Data[i]) * (v - rest.Outputs[0].Data[i])
			}
			assert.LessOrEqual(t, math.Sqrt(diff), 2*(1+1e-12))
			assert.GreaterOrEqual(t, got.Scalars["clipped"], 1.0)
		})
	}
}

// TestUsersAndTraceReaderErrors: in the users and trace pipelines too, an
// empty shard, a corrupt shard and a NaN row fail with the single-machine
// reader's message for that file (read as the same kind).
func TestUsersAndTraceReaderErrors(t *testing.T) {
	good := "user,x0,x1,x2,x3,y\n1,1,2,3,4,5\n2,2,3,4,5,6\n"
	for _, kind := range []data.Kind{data.Users, data.Trace} {
		for _, tc := range []struct {
			name, content string
		}{
			{"empty shard", ""},
			{"corrupt shard", "user,x0,x1,x2,x3,y\n1,2,\"3\n"},
			{"NaN row", "user,x0,x1,x2,x3,y\n3,1,2,3,4,5\n4,1,NaN,3,4,5\n"},
		} {
			t.Run(fmt.Sprint(kind, " ", tc.name), func(t *testing.T) {
				dir := t.TempDir()
				require.NoError(t, os.WriteFile(filepath.Join(dir, "s0.csv"), []byte(good), 0o644))
				bad := filepath.Join(dir, "s1.csv")
				require.NoError(t, os.WriteFile(bad, []byte(tc.content), 0o644))
				// As trace data the user column is one more feature: 5 = d1·d2.
				_, want := dataio.Load(bad, dataio.LoadOptions{Kind: kind, D1: 1, D2: 5})
				require.Error(t, want)
				var err error
				glob := filepath.Join(dir, "s*.csv")
				if kind == data.Users {
					_, err = RunUsersPass(context.Background(), glob, &data.Remote{N: 4, P: 4, Users: 4}, ReadOptions{}, ustatRequest(1), Options{})
				} else {
					_, err = RunPass(context.Background(), glob, &data.Remote{N: 4, P: 5, D1: 1, D2: 5}, ReadOptions{}, pass.TraceMomentKind.EncodeRequest(nil, pass.TraceMomentRequest{}), Options{})
				}
				require.Error(t, err)
				assert.Contains(t, err.Error(), "shard "+bad+": "+want.Error())
			})
		}
	}
}

// TestUserKeyMatchesLoader: UserKey accepts and refuses exactly the ids
// the single-machine loader accepts and refuses, with its message.
func TestUserKeyMatchesLoader(t *testing.T) {
	for _, id := range []string{"7", "-3", "0", "9223372036854775807", "-9223372036854775808",
		"alice", "a b", "Ω", "1_000", "0x1p3", "7a", "--7", "#7",
		"07", "+7", "-0", "7.0", "7e0", "1e3", ".5", "NaN", "inf", "Infinity", "99999999999999999999", "1e400"} {
		t.Run(id, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "u.csv")
			require.NoError(t, os.WriteFile(path, []byte("user,x,y\n1,1,1\n\""+id+"\",2,2\n"), 0o644))
			_, want := dataio.Load(path, dataio.LoadOptions{Kind: data.Users})
			key, err := UserKey(" " + id + " ")
			if want == nil {
				require.NoError(t, err)
				assert.Equal(t, id, key)
				return
			}
			require.Error(t, err)
			assert.Equal(t, want.Error(), path+": user column: row 2: "+err.Error())
		})
	}
}

// trec is a users record with its id as written.
type trec struct {
	id string
	x  []float64
	y  float64
}

func textUsersCSV(recs []trec, d int) string {
	var b strings.Builder
	b.WriteString("user")
	for j := range d {
		fmt.Fprintf(&b, ",x%d", j)
	}
	b.WriteString(",y\n")
	for _, r := range recs {
		b.WriteString(r.id)
		for _, v := range r.x {
			b.WriteString("," + strconvFormat(v))
		}
		b.WriteString("," + strconvFormat(r.y) + "\n")
	}
	return b.String()
}

// writeUsersParquet writes recs as a Parquet shard with one DOUBLE column
// per feature and the user ids as text (BYTE_ARRAY) or INT64.
func writeUsersParquet(t *testing.T, path string, recs []trec, d int, text bool) {
	t.Helper()
	fw, err := local.NewLocalFileWriter(path)
	require.NoError(t, err)
	defer fw.Close()
	md := []string{"name=user, type=INT64"}
	if text {
		md[0] = "name=user, type=BYTE_ARRAY, convertedtype=UTF8"
	}
	for j := range d {
		md = append(md, fmt.Sprintf("name=x%d, type=DOUBLE", j))
	}
	md = append(md, "name=y, type=DOUBLE")
	pw, err := writer.NewCSVWriter(md, fw, 1)
	require.NoError(t, err)
	for _, r := range recs {
		var rec []any
		if text {
			rec = append(rec, r.id)
		} else {
			v, err := strconv.ParseInt(r.id, 10, 64)
			require.NoError(t, err)
			rec = append(rec, v)
		}
		for _, v := range r.x {
			rec = append(rec, v)
		}
		require.NoError(t, pw.Write(append(rec, r.y)))
	}
	require.NoError(t, pw.WriteStop())
}

// userSummary describes one user's group exactly: its key, its row count
// and its responses in increasing order (bit patterns).
func userSummary(key string, rows func(*PosRow) bool) string {
	var ys []float64
	var r PosRow
	for rows(&r) {
		ys = append(ys, r.Y)
	}
	return key + "|" + groupSummary(ys)
}

func groupSummary(ys []float64) string {
	ys = slices.Clone(ys)
	slices.Sort(ys)
	var b strings.Builder
	fmt.Fprintf(&b, "%d", len(ys))
	for _, y := range ys {
		fmt.Fprintf(&b, ",%x", math.Float64bits(y))
	}
	return b.String()
}

func init() {
	register.Function2x1[string, func(*PosRow) bool, string](userSummary)
}

// TestUsersTextIDsAcrossShards: users with text ids (names, integers or
// both), their rows spread over CSV shards (one with integer ids only,
// which the loader keeps as integers, one with names, which it numbers)
// and Parquet shards (text and INT64 ids), are grouped exactly as the
// single-machine loader groups the one file holding every row, and their
// bounded terms sum to the same aggregate.
func TestUsersTextIDsAcrossShards(t *testing.T) {
	const d = 3
	r := rand.New(rand.NewPCG(5, 6))
	var ints, mixed []trec
	for u := range 24 {
		id := fmt.Sprint(u*37 - 300) // negative and positive integers
		if u%3 == 0 {
			id = fmt.Sprintf("user-%c%d", 'a'+u%7, u)
		}
		for range 2 + r.IntN(6) {
			x := make([]float64, d)
			for j := range x {
				x[j] = r.NormFloat64()
			}
			rec := trec{id, x, r.NormFloat64()}
			if u%3 != 0 && r.IntN(2) == 0 {
				ints = append(ints, rec)
			} else {
				mixed = append(mixed, rec)
			}
		}
	}
	r.Shuffle(len(mixed), func(i, j int) { mixed[i], mixed[j] = mixed[j], mixed[i] })
	all := append(slices.Clone(ints), mixed...)
	whole := filepath.Join(t.TempDir(), "whole.csv")
	require.NoError(t, os.WriteFile(whole, []byte(textUsersCSV(all, d)), 0o644))

	dir := t.TempDir()
	h, q := len(ints)/2, len(mixed)/3
	require.NoError(t, os.WriteFile(filepath.Join(dir, "u0.csv"), []byte(textUsersCSV(ints[:h], d)), 0o644))
	writeUsersParquet(t, filepath.Join(dir, "u1.parquet"), ints[h:], d, false)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "u2.csv"), []byte(textUsersCSV(mixed[:q], d)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "u3.csv"), []byte(textUsersCSV(mixed[q:2*q], d)), 0o644))
	writeUsersParquet(t, filepath.Join(dir, "u4.parquet"), mixed[2*q:], d, true)
	glob := filepath.Join(dir, "u*")

	// Every user's rows, by id as written, and as the loader groups them.
	byID := map[string][]float64{}
	for _, rec := range all {
		byID[rec.id] = append(byID[rec.id], rec.y)
	}
	var want, wantGroups, loaderGroups []string
	for id, ys := range byID {
		want = append(want, id+"|"+groupSummary(ys))
		wantGroups = append(wantGroups, groupSummary(ys))
	}
	ds, err := dataio.Load(whole, dataio.LoadOptions{Kind: data.Users})
	require.NoError(t, err)
	for g := range ds.NumUsers() {
		loaderGroups = append(loaderGroups, groupSummary(ds.Y[ds.UserStart[g]:ds.UserStart[g+1]]))
	}
	require.ElementsMatch(t, wantGroups, loaderGroups, "the loader groups the one file by id text")

	t.Run("groups", func(t *testing.T) {
		paths, err := Expand(context.Background(), glob)
		require.NoError(t, err)
		pl, s := beam.NewPipelineWithRoot()
		rows := beam.ParDo(s, &readPosRowsFn{D: d, Paths: paths}, beam.CreateList(s, paths))
		passert.Equals(s, beam.ParDo(s, userSummary, beam.GroupByKey(s, rows)), strAny(want)...)
		require.NoError(t, execute(context.Background(), "", pl))
	})
	t.Run("aggregates", func(t *testing.T) {
		usersMatch(t, glob, whole, ustatRequest(1.5))
	})
}

func strAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// TestUsersRefusedID: an id the single-machine loader refuses fails the
// pipeline with the loader's message for that shard, from a CSV shard or
// (the same message after the file name) from a Parquet text column.
func TestUsersRefusedID(t *testing.T) {
	const d = 2
	good := []trec{{"7", []float64{1, 2}, 3}, {"bob", []float64{2, 1}, 1}, {"7", []float64{0, 1}, 2}}
	bad := []trec{{"bob", []float64{1, 1}, 1}, {"07", []float64{1, 0}, 2}}
	for _, pq := range []bool{false, true} {
		t.Run(fmt.Sprint("parquet ", pq), func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "s0.csv"), []byte(textUsersCSV(good, d)), 0o644))
			badCSV := filepath.Join(t.TempDir(), "s1.csv")
			require.NoError(t, os.WriteFile(badCSV, []byte(textUsersCSV(bad, d)), 0o644))
			_, want := dataio.Load(badCSV, dataio.LoadOptions{Kind: data.Users})
			require.Error(t, want)
			require.Contains(t, want.Error(), `user id "07" is a number not written as a canonical integer`)
			shard := filepath.Join(dir, "s1.csv")
			if pq {
				shard = filepath.Join(dir, "s1.parquet")
				writeUsersParquet(t, shard, bad, d, true)
			} else {
				require.NoError(t, os.Rename(badCSV, shard))
			}
			_, err := RunUsersPass(context.Background(), filepath.Join(dir, "s*"), &data.Remote{N: 5, P: d, Users: 4}, ReadOptions{}, ustatRequest(1), Options{})
			require.Error(t, err)
			after := strings.TrimPrefix(want.Error(), badCSV)
			assert.Contains(t, err.Error(), "shard "+shard+": "+shard+after)
		})
	}
}

// TestUsersHeaderlessColumns: headerless shards (one gzip-compressed and
// tab-separated) with the user id in a column named by index are grouped
// as the single-machine loader groups the one file read with the same
// options.
func TestUsersHeaderlessColumns(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	ids := []string{"ann", "7", "bo", "-2", "cy", "0"}
	type row struct {
		id      string
		y, a, b float64
	}
	var rows []row
	for range 40 {
		rows = append(rows, row{ids[r.IntN(len(ids))], r.NormFloat64(), r.NormFloat64(), r.NormFloat64()})
	}
	write := func(rs []row, sep string) []byte {
		var b strings.Builder
		for _, x := range rs {
			fmt.Fprintf(&b, "%s%s%s%s%s%s%s\n", strconvFormat(x.y), sep, strconvFormat(x.a), sep, x.id, sep, strconvFormat(x.b))
		}
		return []byte(b.String())
	}
	dir := t.TempDir()
	var gz strings.Builder
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write(write(rows[:25], "\t"))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.tsv.gz"), []byte(gz.String()), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.csv"), write(rows[25:], ","), 0o644))
	whole := filepath.Join(t.TempDir(), "whole.csv")
	require.NoError(t, os.WriteFile(whole, write(rows, ","), 0o644))

	ro := ReadOptions{Header: "no", Parquet: ParquetSchema{User: "2", Response: "0"}}
	lo, err := ro.load()
	require.NoError(t, err)
	lo.Kind, lo.UserColumn, lo.ResponseColumn = data.Users, "2", "0"
	ds, err := dataio.Load(whole, lo)
	require.NoError(t, err)
	var loaderGroups []string
	for g := range ds.NumUsers() {
		loaderGroups = append(loaderGroups, groupSummary(ds.Y[ds.UserStart[g]:ds.UserStart[g+1]]))
	}
	byID := map[string][]float64{}
	for _, x := range rows {
		byID[x.id] = append(byID[x.id], x.y)
	}
	var want, wantGroups []string
	for id, ys := range byID {
		want = append(want, id+"|"+groupSummary(ys))
		wantGroups = append(wantGroups, groupSummary(ys))
	}
	require.ElementsMatch(t, wantGroups, loaderGroups)

	paths, err := Expand(context.Background(), filepath.Join(dir, "*"))
	require.NoError(t, err)
	pl, s := beam.NewPipelineWithRoot()
	keyed := beam.ParDo(s, &readPosRowsFn{D: 2, Paths: paths, Opt: ro}, beam.CreateList(s, paths))
	passert.Equals(s, beam.ParDo(s, userSummary, beam.GroupByKey(s, keyed)), strAny(want)...)
	require.NoError(t, execute(context.Background(), "", pl))
}

// TestUsersPassTextIDs: with text user ids, whose index in the
// single-machine data set is their order of first appearance, the users
// passes over CSV and Parquet shards equal pass.Local on the one file
// holding the shards' rows in path order (the group of an altmin pass is a
// mask over those indexes), and Describe counts the distinct users across
// shards and gives the one file's identity.
func TestUsersPassTextIDs(t *testing.T) {
	const d, k = 3, 2
	r := rand.New(rand.NewPCG(12, 13))
	var recs []trec
	for u := range 21 {
		id := fmt.Sprintf("p%02d", 40-u)
		if u%4 == 1 {
			id = fmt.Sprint(500 - u) // integers among the names
		}
		for range 2 + r.IntN(5) {
			x := make([]float64, d)
			for j := range x {
				x[j] = r.NormFloat64()
			}
			recs = append(recs, trec{id, x, r.NormFloat64()})
		}
	}
	r.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	third := len(recs) / 3
	parts := [][]trec{recs[:third], recs[third : 2*third], recs[2*third:]}
	whole := filepath.Join(t.TempDir(), "whole.csv")
	require.NoError(t, os.WriteFile(whole, []byte(textUsersCSV(recs, d)), 0o644))
	ds, err := dataio.Load(whole, dataio.LoadOptions{Kind: data.Users})
	require.NoError(t, err)
	shape := pass.ShapeOf(ds)
	u := []float64{0.6, 0, 0, 0.8, 0.8, 0}
	reqs := []data.PassRequest{
		pass.UsersUstatKind.EncodeRequest(shape, pass.UstatRequest{UsersData: pass.UsersData{LocalFraction: 0.25, Holdout: 0.2}, Clip: 0.5}),
		pass.UsersAltMinKind.EncodeRequest(shape, pass.AltMinRequest{UsersData: pass.UsersData{LocalFraction: 0.25, Holdout: 0.2, Group: groupMask(shape.Users)},
			UsersModel: pass.UsersModel{U: u, Rank: k}, ClipW: 0.7, ClipY: 3, Portion: 4}),
	}
	for _, withParquet := range []bool{false, true} {
		t.Run(fmt.Sprint("parquet ", withParquet), func(t *testing.T) {
			dir := t.TempDir()
			for i, part := range parts {
				if withParquet && i == 2 {
					writeUsersParquet(t, filepath.Join(dir, fmt.Sprintf("u%d.parquet", i)), part, d, true)
					continue
				}
				require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("u%d.csv", i)), []byte(textUsersCSV(part, d)), 0o644))
			}
			glob := filepath.Join(dir, "u*")
			for _, req := range reqs {
				got, err := RunUsersPass(context.Background(), glob, shape, ReadOptions{}, req, Options{})
				require.NoError(t, err)
				want, err := pass.Local(ds).Pass(context.Background(), req)
				require.NoError(t, err)
				assert.Equal(t, want.Records, got.Records, req.Kind)
				require.Len(t, got.Outputs, len(want.Outputs))
				for i, w := range want.Outputs {
					assert.Less(t, relVec(got.Outputs[i].Data, w.Data), 1e-12, "%s %s", req.Kind, w.Name)
				}
			}
			desc, err := Describe(context.Background(), glob, data.Users, 0, 0, Options{})
			require.NoError(t, err)
			assert.EqualValues(t, ds.NumUsers(), desc.Users)
			if !withParquet {
				_, id, err := dataio.LoadIdentity(whole, dataio.LoadOptions{Kind: data.Users})
				require.NoError(t, err)
				assert.Equal(t, id, desc.Identity.Identity())
			}
		})
	}
}

// BenchmarkUsersCSVShard: reading a users CSV shard (10^5 rows, 20
// features, text ids) with the single-machine loader alone, and as the
// pipelines read it (the loader, then the id column read again for the
// ids' text and the rows' positions).
func BenchmarkUsersCSVShard(b *testing.B) {
	const n, d = 100000, 20
	r := rand.New(rand.NewPCG(1, 2))
	var sb strings.Builder
	sb.WriteString("user")
	for j := range d {
		fmt.Fprintf(&sb, ",x%d", j)
	}
	sb.WriteString(",y\n")
	for range n {
		fmt.Fprintf(&sb, "u%d", r.IntN(5000))
		for range d + 1 {
			sb.WriteString("," + strconvFormat(r.NormFloat64()))
		}
		sb.WriteByte('\n')
	}
	path := filepath.Join(b.TempDir(), "u.csv")
	require.NoError(b, os.WriteFile(path, []byte(sb.String()), 0o644))
	b.Run("loader", func(b *testing.B) {
		for b.Loop() {
			_, err := dataio.Load(path, dataio.LoadOptions{Kind: data.Users, SkipHash: true})
			require.NoError(b, err)
		}
	})
	b.Run("pipeline reader", func(b *testing.B) {
		for b.Loop() {
			_, err := readLocal(path, data.Users, ReadOptions{}, 0, 0, nil)
			require.NoError(b, err)
		}
	})
}

// TestUsersRemoteShards: users shards on another Beam filesystem (memfs
// here; gs:// or s3:// at scale), one gzip-compressed and tab-separated,
// are read as local files of the same name and group as the one file.
func TestUsersRemoteShards(t *testing.T) {
	const d = 2
	recs := []trec{{"ann", []float64{1, 2}, 3}, {"7", []float64{0, 1}, 1}, {"ann", []float64{2, 2}, 0.5},
		{"bo", []float64{1, 0}, 2}, {"7", []float64{1, 1}, -1}, {"bo", []float64{0, 3}, 1}, {"ann", []float64{3, 1}, 2}}
	tsv := strings.ReplaceAll(textUsersCSV(recs[:4], d), ",", "\t")
	var gz strings.Builder
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write([]byte(tsv))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	dir := fmt.Sprintf("memfs://%s/", t.Name())
	memfs.Write(dir+"a.tsv.gz", []byte(gz.String()))
	memfs.Write(dir+"b.csv", []byte(textUsersCSV(recs[4:], d)))
	whole := filepath.Join(t.TempDir(), "whole.csv")
	require.NoError(t, os.WriteFile(whole, []byte(textUsersCSV(recs, d)), 0o644))
	usersMatch(t, dir+"*", whole, ustatRequest(5))
}
