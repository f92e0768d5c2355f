package rowsrc

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/privacy"
)

// TestFileAndPassesAgree: a source over rows in memory (kernels run in
// process) and over the same rows reached only through a Passer give the
// same aggregates, bit for bit, and the same private clip from the same
// seed; the aggregates are the kernels'.
func TestFileAndPassesAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	x := mat.NewDense(500, 7, nil)
	for i := 0; i < 500; i++ {
		for j := 0; j < 7; j++ {
			x.Set(i, j, r.NormFloat64()*float64(1+i%4))
		}
	}
	ds := &data.Dataset{Kind: data.Rows, X: x}
	loc, err := Of(ds)
	require.NoError(t, err)
	rem, err := Of(pass.RemoteOf(ds, nil))
	require.NoError(t, err)
	assert.NotNil(t, loc.Rows())
	assert.Nil(t, rem.Rows())
	ctx := context.Background()
	mu := []float64{1, 0, -1, 0.5, 0, 0, 2}

	for _, c := range [][]float64{nil, mu} {
		a, err := loc.Sum(ctx, c, 2)
		require.NoError(t, err)
		b, err := rem.Sum(ctx, c, 2)
		require.NoError(t, err)
		assert.Equal(t, a, b)
		want, err := kernel.ClippedSum(ctx, x, c, 2)
		require.NoError(t, err)
		assert.Equal(t, want, a)
	}

	for _, c := range []float64{0, 3, math.Inf(1)} {
		ga, ka, err := loc.SecondMoment(ctx, mu, c, 1.0/500)
		require.NoError(t, err)
		gb, kb, err := rem.SecondMoment(ctx, mu, c, 1.0/500)
		require.NoError(t, err)
		assert.True(t, mat.Equal(ga, gb), "clip %v", c)
		assert.Equal(t, ka, kb)
		gk, kk, err := kernel.SecondMoment(ctx, x, mu, c, 1.0/500, nil)
		require.NoError(t, err)
		assert.True(t, mat.EqualApprox(gk, ga, 1e-12), "clip %v", c)
		assert.Equal(t, kk, ka)
	}

	ma, sa, err := loc.Moments(ctx)
	require.NoError(t, err)
	mb, sb, err := rem.Moments(ctx)
	require.NoError(t, err)
	assert.Equal(t, ma, mb)
	assert.Equal(t, sa, sb)

	for _, m := range [][]float64{nil, mu} {
		clip := func(s *Source) float64 {
			acct, err := privacy.NewAccountant(privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1})
			require.NoError(t, err)
			c, err := s.PrivateNorm(ctx, acct, privacy.NewSeededSource(3), "clip quantile", clipPlan(t, acct, 0.5), "clip", m, 0.5)
			require.NoError(t, err)
			require.Len(t, acct.Steps(), 1)
			return c
		}
		assert.Equal(t, clip(loc), clip(rem))
	}

	assert.Equal(t, []string{pass.RowsCentredMoment, pass.RowsNormHistogram, pass.RowsClippedSum}, Kinds(true, true))
	_, err = Of(&data.Dataset{Kind: data.Trace})
	assert.Error(t, err)
}

// A non-finite row fails the private clip before its step, naming the
// entry (NaN, Inf) or the overflow.
func TestPrivateNormRefusesBeforeAnyStep(t *testing.T) {
	for _, c := range []struct {
		name string
		bad  float64
		want string
	}{
		{"NaN", math.NaN(), "row 2, column 1"},
		{"+Inf", math.Inf(1), "row 2, column 1"},
		{"overflowing norm", 1e200, "data row 2: its norm overflows"},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := mat.NewDense(5, 3, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6})
			x.Set(2, 1, c.bad)
			src, err := Of(&data.Dataset{Kind: data.Rows, X: x})
			require.NoError(t, err)
			acct, err := privacy.NewAccountant(privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1})
			require.NoError(t, err)
			_, err = src.PrivateNorm(context.Background(), acct, privacy.NewSeededSource(1), "clip quantile",
				clipPlan(t, acct, 0.1), "clip", nil, 0.5)
			assert.ErrorContains(t, err, c.want)
			assert.Empty(t, acct.Steps())
		})
	}
}

// TestBytesAndFloatsAgree: a source over rows kept as bytes with a scale
// (data.Bytes, decoded block by block) gives the aggregates of the same
// rows decoded into float64, bit for bit wherever rows are centred or
// clipped (both then copy rows into blocks alike), and up to summation
// order for the plain second moment (which a float64 X multiplies in
// place); the same private clip from the same seed.
func TestBytesAndFloatsAgree(t *testing.T) {
	const n, p = 600, 9
	bds := byteRows(t, 3, n, p)
	require.NoError(t, bds.CheckShape())
	fds := bds.WithDenseX()
	require.NotNil(t, fds.X)
	assert.Nil(t, bds.X, "WithDenseX copies")
	row := make([]float64, p)
	for i, v := range fds.X.RawMatrix().Data {
		require.Equal(t, bds.XBytes.Row(i/p, row)[i%p], v)
	}
	bs, err := Of(bds)
	require.NoError(t, err)
	fs, err := Of(fds)
	require.NoError(t, err)
	ctx := context.Background()
	mu := make([]float64, p)
	for j := range mu {
		mu[j] = 0.5
	}
	for _, c := range []float64{0, 1, 2.5} {
		for _, m := range [][]float64{nil, mu} {
			a, err := bs.Sum(ctx, m, c)
			require.NoError(t, err)
			b, err := fs.Sum(ctx, m, c)
			require.NoError(t, err)
			assert.Equal(t, b, a, "sum, clip %v", c)
			ga, ka, err := bs.SecondMoment(ctx, m, c, 1.0/n)
			require.NoError(t, err)
			gb, kb, err := fs.SecondMoment(ctx, m, c, 1.0/n)
			require.NoError(t, err)
			assert.Equal(t, kb, ka)
			if m != nil || c > 0 {
				assert.Equal(t, gb, ga, "second moment, clip %v, centred %v", c, m != nil)
			} else {
				assert.True(t, mat.EqualApprox(gb, ga, 1e-13), "plain second moment")
			}
		}
	}
	ma, sa, err := bs.Moments(ctx)
	require.NoError(t, err)
	mb, sb, err := fs.Moments(ctx)
	require.NoError(t, err)
	assert.Equal(t, mb, ma)
	assert.True(t, mat.EqualApprox(sb, sa, 1e-13))
	for _, m := range [][]float64{nil, mu} {
		clip := func(s *Source) float64 {
			acct, err := privacy.NewAccountant(privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1})
			require.NoError(t, err)
			c, err := s.PrivateNorm(ctx, acct, privacy.NewSeededSource(5), "clip quantile", clipPlan(t, acct, 0.5), "clip", m, 0.5)
			require.NoError(t, err)
			return c
		}
		assert.Equal(t, clip(fs), clip(bs))
	}
}

// The norms of a private clip over rows in memory are kept for the passes
// that follow about the same centre, and only for those: a clipped sum and
// second moment after a clip about μ equal those of a source that kept no
// norms, bit for bit, on float64 and byte rows, about 0 and about μ.
func TestKeptNorms(t *testing.T) {
	const n, p = 700, 6
	bds := byteRows(t, 5, n, p)
	ctx := context.Background()
	mu := []float64{0.5, 0.4, 0.6, 0.5, 0.3, 0.7}
	for _, ds := range []*data.Dataset{bds, bds.WithDenseX()} {
		for _, m := range [][]float64{nil, mu} {
			kept, err := Of(ds)
			require.NoError(t, err)
			acct, err := privacy.NewAccountant(privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1})
			require.NoError(t, err)
			c, err := kept.PrivateNorm(ctx, acct, privacy.NewSeededSource(7), "clip quantile", clipPlan(t, acct, 0.5), "clip", m, 0.5)
			require.NoError(t, err)
			require.NotNil(t, kept.norms(m))
			assert.Nil(t, kept.norms([]float64{1, 1, 1, 1, 1, 1}), "kept for their centre only")
			fresh, err := Of(ds)
			require.NoError(t, err)
			a, err := kept.Sum(ctx, m, c)
			require.NoError(t, err)
			b, err := fresh.Sum(ctx, m, c)
			require.NoError(t, err)
			assert.Equal(t, b, a)
			ga, ka, err := kept.SecondMoment(ctx, m, c, 1.0/n)
			require.NoError(t, err)
			gb, kb, err := fresh.SecondMoment(ctx, m, c, 1.0/n)
			require.NoError(t, err)
			assert.Equal(t, gb, ga)
			assert.Equal(t, kb, ka)
			assert.Positive(t, ka)
		}
	}
}

// clipPlan is a pure plan of acct's grant whose one share "clip" is the
// fraction w of ε for one exponential step.
func clipPlan(t *testing.T, acct *privacy.Accountant, w float64) *privacy.Plan {
	plan, err := privacy.NewPlan(acct, privacy.NoisePure, privacy.Share{Name: "clip", Weight: w, Mechanism: privacy.MechExponential})
	require.NoError(t, err)
	return plan
}

// byteRows is an n×p rows data set of random bytes scaled by 1/255, kept
// as bytes, drawn from seed.
func byteRows(t *testing.T, seed uint64, n, p int) *data.Dataset {
	r := rand.New(rand.NewPCG(seed, seed+1))
	raw := make([]byte, n*p)
	for i := range raw {
		raw[i] = byte(r.IntN(256))
	}
	xb, err := data.NewBytes(n, p, raw, 1.0/255)
	require.NoError(t, err)
	return &data.Dataset{Kind: data.Rows, XBytes: xb}
}
