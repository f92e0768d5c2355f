package pass

import (
	"context"
	"fmt"
	"math"

	"github.com/dplr/dplr/engine/data"
)

// The trace passes are the four aggregates the trace-regression estimators
// (plugins/rgrad) read their data through. A sample is a d1×d2 matrix X_i,
// flattened row-major to x_i (length p = d1·d2), and a response y_i. Every
// output "sum" is a 1×p row (the flattened d1×d2 matrix), a sum over the
// n samples, not divided by n.
const (
	// TraceMoment is Σ_i y_i x_i: the unbiased moment matrix before 1/n
	// and Λ⁻¹ (the non-private and model-calibrated initialisations).
	TraceMoment = "trace.moment"
	// TraceClippedMoment is Σ_i clip(y_i, cy)·clip(x_i, cx), with
	// |clip(y, cy)| = min(|y|, cy) and clip(x, cx) = x·min(1, cx/‖x‖₂);
	// scalar "clipped" counts the samples where either clip was active.
	// Every term has norm ≤ cx·cy (rgrad-strict's initialisation).
	TraceClippedMoment = "trace.clipped_moment"
	// TraceGradient is Σ_i res_i x_i with res_i = <x_i, m> − y_i at the
	// iterate m (input "m", 1×p); scalar "loss" is Σ_i res_i² (the
	// non-private gradient iteration).
	TraceGradient = "trace.gradient"
	// TraceClippedGradient is Σ_i w_i x_i with res_i = <x_i, m> − y_i and
	// w_i = res_i·min(1, τ/(|res_i|·‖P_T(X_i)‖_F)), where P_T is the
	// orthogonal projection onto the tangent space of the rank-r manifold
	// at column space U (input "u", d1×r) and row space V (input "vt",
	// r×d2 = Vᵀ), both with orthonormal columns: every projected term
	// w_i·P_T(X_i) has Frobenius norm ≤ τ (param "tau"; "rank" is r).
	// Scalars: "loss" Σ_i res_i² and "clipped" the number of samples whose
	// weight was shrunk (the private gradient iterations).
	TraceClippedGradient = "trace.clipped_gradient"
)

// boundSlack is the relative allowance for rounding in the bounds a
// result must satisfy (a sum of n terms of norm ≤ c has norm ≤ n·c up to
// rounding; a forged or unclipped sum exceeds it by far more).
const boundSlack = 1 + 1e-9

// orthoTol is how far UᵀU and VᵀV may be from the identity in a
// clipped-gradient request: the bound ‖P_T(·)‖ ≤ τ means nothing for a
// P_T that is not an orthogonal projection, and the estimator's factors
// come from SVDs and QRs, orthonormal to about 1e-14.
const orthoTol = 1e-8

func traceSum(sh *data.Remote, _ data.PassRequest) []ArraySpec {
	return []ArraySpec{{Name: "sum", Rows: 1, Cols: sh.P, Doc: "the flattened d1×d2 sum, not divided by n"}}
}

func allRecords(sh *data.Remote) int64 { return int64(sh.N) }

func init() {
	register(Spec{
		Kind: TraceMoment, Data: data.Trace,
		Doc:     "moment sum Σ y_i x_i (1×p, x_i = vec(X_i) row-major; not divided by n)",
		Outputs: traceSum,
		Records: allRecords,
		Local:   traceMomentLocal,
	})
	register(Spec{
		Kind: TraceClippedMoment, Data: data.Trace,
		Doc:     "clipped moment sum Σ clip(y_i, cy)·x_i·min(1, cx/‖x_i‖₂) (1×p); scalar clipped: samples where either clip was active",
		Params:  []string{"cx", "cy"},
		Outputs: traceSum,
		Scalars: []string{"clipped"},
		Records: allRecords,
		CheckRequest: func(_ *data.Remote, req data.PassRequest) error {
			for _, name := range []string{"cx", "cy"} {
				if v := req.Params[name]; !(v > 0) {
					return fmt.Errorf("%s = %v must be positive", name, v)
				}
			}
			return nil
		},
		CheckResult: func(_ *data.Remote, req data.PassRequest, res *data.PassResult) error {
			sum, _ := res.Output("sum")
			if err := checkCount(res, "clipped"); err != nil {
				return err
			}
			if Norm(sum.Data) > float64(res.Records)*req.Params["cx"]*req.Params["cy"]*boundSlack {
				return fmt.Errorf("the sum's norm exceeds n·cx·cy: the samples were not clipped to ‖x_i‖ ≤ %g, |y_i| ≤ %g", req.Params["cx"], req.Params["cy"])
			}
			return nil
		},
		Local: traceClippedMomentLocal,
	})
	register(Spec{
		Kind: TraceGradient, Data: data.Trace,
		Doc: "gradient sum Σ res_i x_i, res_i = <x_i, m> − y_i at the iterate m (1×p); scalar loss: Σ res_i²",
		Inputs: func(sh *data.Remote, _ map[string]float64) []ArraySpec {
			return []ArraySpec{{Name: "m", Rows: 1, Cols: sh.P, Doc: "the iterate, flattened d1×d2"}}
		},
		Outputs: traceSum,
		Scalars: []string{"loss"},
		Records: allRecords,
		CheckResult: func(_ *data.Remote, _ data.PassRequest, res *data.PassResult) error {
			if res.Scalars["loss"] < 0 {
				return fmt.Errorf("the loss, a sum of squares, is negative")
			}
			return nil
		},
		Local: traceGradientLocal,
	})
	register(Spec{
		Kind: TraceClippedGradient, Data: data.Trace,
		Doc: "clipped gradient sum Σ w_i x_i, res_i = <x_i, m> − y_i, w_i = res_i·min(1, τ/(|res_i|·‖P_T(X_i)‖_F)), P_T the tangent projection at (u, vt) (1×p); " +
			"scalars loss: Σ res_i², clipped: samples whose weight was shrunk",
		Params: []string{"tau", "rank"},
		Inputs: func(sh *data.Remote, params map[string]float64) []ArraySpec {
			r := rankOf(sh, params) // 0 for a bad rank: the shapes then fail to match
			return []ArraySpec{
				{Name: "m", Rows: 1, Cols: sh.P, Doc: "the iterate, flattened d1×d2"},
				{Name: "u", Rows: sh.D1, Cols: r, Doc: "column space U of the tangent space (orthonormal columns)"},
				{Name: "vt", Rows: r, Cols: sh.D2, Doc: "row space Vᵀ of the tangent space (orthonormal rows)"},
			}
		},
		Outputs: traceSum,
		Scalars: []string{"loss", "clipped"},
		Records: allRecords,
		CheckRequest: func(sh *data.Remote, req data.PassRequest) error {
			if tau := req.Params["tau"]; !(tau > 0) {
				return fmt.Errorf("tau = %v must be positive", tau)
			}
			r := rankOf(sh, req.Params)
			if r == 0 {
				return fmt.Errorf("rank %v must be an integer in [1, min(d1, d2) = %d]", req.Params["rank"], min(sh.D1, sh.D2))
			}
			u, _ := req.Input("u")
			vt, _ := req.Input("vt")
			if !orthonormalColumns(u.Data, sh.D1, r) {
				return fmt.Errorf("input u does not have orthonormal columns")
			}
			if !orthonormalColumns(transpose(vt.Data, r, sh.D2), sh.D2, r) {
				return fmt.Errorf("input vt does not have orthonormal rows")
			}
			return nil
		},
		CheckResult: func(sh *data.Remote, req data.PassRequest, res *data.PassResult) error {
			if res.Scalars["loss"] < 0 {
				return fmt.Errorf("the loss, a sum of squares, is negative")
			}
			if err := checkCount(res, "clipped"); err != nil {
				return err
			}
			sum, _ := res.Output("sum")
			u, _ := req.Input("u")
			vt, _ := req.Input("vt")
			r := rankOf(sh, req.Params)
			pt := TangentProject(sum.Data, u.Data, vt.Data, sh.D1, sh.D2, r)
			if Norm(pt) > float64(res.Records)*req.Params["tau"]*boundSlack {
				return fmt.Errorf("the tangent projection of the sum has norm above n·τ: the per-sample projected gradients were not clipped to τ = %g", req.Params["tau"])
			}
			return nil
		},
		Local: traceClippedGradientLocal,
	})
}

// rankOf returns the "rank" parameter when it is an integer in [1,
// min(d1, d2)], else 0.
func rankOf(sh *data.Remote, params map[string]float64) int {
	v := params["rank"]
	if v != math.Trunc(v) || v < 1 || v > float64(min(sh.D1, sh.D2)) {
		return 0
	}
	return int(v)
}

// checkCount checks that scalar name is an integer count in [0, Records].
func checkCount(res *data.PassResult, name string) error {
	v := res.Scalars[name]
	if v != math.Trunc(v) || v < 0 || v > float64(res.Records) {
		return fmt.Errorf("scalar %s is not a count of records in [0, %d]", name, res.Records)
	}
	return nil
}

// orthonormalColumns reports whether the row-major d×r matrix a has
// orthonormal columns up to orthoTol in every entry of aᵀa − I.
func orthonormalColumns(a []float64, d, r int) bool {
	for k := 0; k < r; k++ {
		for l := k; l < r; l++ {
			var s float64
			for i := 0; i < d; i++ {
				s += a[i*r+k] * a[i*r+l]
			}
			if k == l {
				s--
			}
			if math.Abs(s) > orthoTol {
				return false
			}
		}
	}
	return true
}

// transpose returns the transpose of the row-major rows×cols a.
func transpose(a []float64, rows, cols int) []float64 {
	out := make([]float64, len(a))
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			out[j*rows+i] = a[i*cols+j]
		}
	}
	return out
}

// TangentProject returns P_T(a) = UUᵀa + aVVᵀ − UUᵀaVVᵀ for the row-major
// d1×d2 a, u (d1×r, orthonormal columns) and vt (r×d2 = Vᵀ, orthonormal
// rows): the orthogonal projection onto the tangent space of the rank-r
// manifold at a point with column space U and row space V.
func TangentProject(a, u, vt []float64, d1, d2, r int) []float64 {
	uta := make([]float64, r*d2) // Uᵀa
	av := make([]float64, d1*r)  // aV
	for i := 0; i < d1; i++ {
		ai := a[i*d2 : (i+1)*d2]
		for k := 0; k < r; k++ {
			uik := u[i*r+k]
			var s float64
			for j, x := range ai {
				uta[k*d2+j] += uik * x
				s += x * vt[k*d2+j]
			}
			av[i*r+k] = s
		}
	}
	utav := make([]float64, r*r) // UᵀaV
	for k := 0; k < r; k++ {
		for l := 0; l < r; l++ {
			var s float64
			for j := 0; j < d2; j++ {
				s += uta[k*d2+j] * vt[l*d2+j]
			}
			utav[k*r+l] = s
		}
	}
	// P_T(a) = U(Uᵀa) + (aV)Vᵀ − U(UᵀaV)Vᵀ.
	out := make([]float64, d1*d2)
	w := make([]float64, r) // row i of U·UᵀaV
	for i := 0; i < d1; i++ {
		for l := 0; l < r; l++ {
			var s float64
			for k := 0; k < r; k++ {
				s += u[i*r+k] * utav[k*r+l]
			}
			w[l] = s
		}
		oi := out[i*d2 : (i+1)*d2]
		for k := 0; k < r; k++ {
			uik, c := u[i*r+k], av[i*r+k]-w[k]
			for j := range oi {
				oi[j] += uik*uta[k*d2+j] + c*vt[k*d2+j]
			}
		}
	}
	return out
}

// projectedNorm returns ‖P_T(x)‖_F from ‖P_T x‖² = ‖Uᵀx‖² + ‖xV‖² −
// ‖UᵀxV‖² (orthonormal U, V), the per-sample norm the clipped-gradient
// pass clips; utx (r·d2) and xv (d1·r) are scratch.
func projectedNorm(x, u, vt []float64, d1, d2, r int, utx, xv []float64) float64 {
	for j := range utx {
		utx[j] = 0
	}
	for a := 0; a < d1; a++ {
		xa := x[a*d2 : (a+1)*d2]
		for k := 0; k < r; k++ {
			uak := u[a*r+k]
			var s float64
			for j, v := range xa {
				utx[k*d2+j] += uak * v
				s += v * vt[k*d2+j]
			}
			xv[a*r+k] = s
		}
	}
	var n2 float64
	for _, v := range utx {
		n2 += v * v
	}
	for _, v := range xv {
		n2 += v * v
	}
	for k := 0; k < r; k++ {
		for l := 0; l < r; l++ {
			var c float64
			for a := 0; a < d1; a++ {
				c += u[a*r+k] * xv[a*r+l]
			}
			n2 -= c * c
		}
	}
	return math.Sqrt(math.Max(n2, 0))
}

func dot(a, b []float64) float64 {
	var s float64
	for j, v := range a {
		s += v * b[j]
	}
	return s
}

func addScaled(dst []float64, alpha float64, s []float64) {
	for j, v := range s {
		dst[j] += alpha * v
	}
}

func traceResult(n, p int, sum []float64, scalars map[string]float64) *data.PassResult {
	return &data.PassResult{Records: int64(n), Outputs: []data.Array{{Name: "sum", Rows: 1, Cols: p, Data: sum}}, Scalars: scalars}
}

// traceMomentLocal is TraceMoment over in-memory samples.
func traceMomentLocal(ctx context.Context, ds *data.Dataset, _ data.PassRequest) (*data.PassResult, error) {
	n, p := ds.X.Dims()
	sum := make([]float64, p)
	for i := 0; i < n; i++ {
		if i%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		addScaled(sum, ds.Y[i], ds.X.RawRowView(i))
	}
	return traceResult(n, p, sum, nil), nil
}

// traceClippedMomentLocal is TraceClippedMoment over in-memory samples.
func traceClippedMomentLocal(ctx context.Context, ds *data.Dataset, req data.PassRequest) (*data.PassResult, error) {
	n, p := ds.X.Dims()
	cx, cy := req.Params["cx"], req.Params["cy"]
	sum := make([]float64, p)
	clipped := 0
	for i := 0; i < n; i++ {
		if i%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		x, y := ds.X.RawRowView(i), ds.Y[i]
		s, c := 1.0, false
		if nx := math.Sqrt(dot(x, x)); nx > cx {
			s, c = cx/nx, true
		}
		if math.Abs(y) > cy {
			y, c = math.Copysign(cy, y), true
		}
		if c {
			clipped++
		}
		addScaled(sum, s*y, x)
	}
	return traceResult(n, p, sum, map[string]float64{"clipped": float64(clipped)}), nil
}

// traceGradientLocal is TraceGradient over in-memory samples.
func traceGradientLocal(ctx context.Context, ds *data.Dataset, req data.PassRequest) (*data.PassResult, error) {
	n, p := ds.X.Dims()
	m, _ := req.Input("m")
	sum := make([]float64, p)
	var loss float64
	for i := 0; i < n; i++ {
		if i%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		x := ds.X.RawRowView(i)
		res := dot(x, m.Data) - ds.Y[i]
		loss += res * res
		addScaled(sum, res, x)
	}
	return traceResult(n, p, sum, map[string]float64{"loss": loss}), nil
}

// traceClippedGradientLocal is TraceClippedGradient over in-memory samples.
func traceClippedGradientLocal(ctx context.Context, ds *data.Dataset, req data.PassRequest) (*data.PassResult, error) {
	n, p := ds.X.Dims()
	sh := ShapeOf(ds)
	d1, d2, r := sh.D1, sh.D2, rankOf(sh, req.Params)
	tau := req.Params["tau"]
	m, _ := req.Input("m")
	u, _ := req.Input("u")
	vt, _ := req.Input("vt")
	utx, xv := make([]float64, r*d2), make([]float64, d1*r)
	sum := make([]float64, p)
	var loss float64
	clipped := 0
	for i := 0; i < n; i++ {
		if i%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		x := ds.X.RawRowView(i)
		res := dot(x, m.Data) - ds.Y[i]
		loss += res * res
		w := res
		if g := math.Abs(res) * projectedNorm(x, u.Data, vt.Data, d1, d2, r, utx, xv); g > tau {
			w = res * tau / g
			clipped++
		}
		addScaled(sum, w, x)
	}
	return traceResult(n, p, sum, map[string]float64{"loss": loss, "clipped": float64(clipped)}), nil
}
