package pass

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/floats"

	"github.com/dplr/dplr/engine/data"
)

// RowsMoment is the rows pass behind the second-moment estimators: with
// w_i = min(1, clip/‖x_i‖) (w_i = 1 when clip is 0), it returns
// sum = Σ w_i x_i (1×p) and moment = Σ w_i² x_i x_iᵀ (p×p, not divided by
// n): the statistics dplr-beam stats writes, as a pass.
const RowsMoment = "rows.moment"

func init() {
	register(Spec{
		Kind: RowsMoment, Data: data.Rows,
		Doc:    "clipped sum Σ w_i x_i and second moment Σ w_i² x_i x_iᵀ, w_i = min(1, clip/‖x_i‖) (clip 0: none)",
		Params: []string{"clip"},
		Outputs: func(sh *data.Remote, _ data.PassRequest) []ArraySpec {
			return []ArraySpec{{Name: "sum", Rows: 1, Cols: sh.P}, {Name: "moment", Rows: sh.P, Cols: sh.P}}
		},
		Records: func(sh *data.Remote) int64 { return int64(sh.N) },
		CheckRequest: func(_ *data.Remote, req data.PassRequest) error {
			if c := req.Params["clip"]; c < 0 {
				return fmt.Errorf("clip %v is negative", c)
			}
			return nil
		},
		CheckResult: func(sh *data.Remote, req data.PassRequest, res *data.PassResult) error {
			sum, _ := res.Output("sum")
			mom, _ := res.Output("moment")
			st := &data.Statistics{N: int(res.Records), P: sh.P, Clip: req.Params["clip"], Sum: sum.Data, Moment: symOf(sh.P, mom.Data)}
			if st.Moment == nil {
				return fmt.Errorf("the second moment is not symmetric")
			}
			return st.Check()
		},
		Local: rowsMomentLocal,
	})
}

// rowsMomentLocal is RowsMoment over in-memory rows.
func rowsMomentLocal(ctx context.Context, ds *data.Dataset, req data.PassRequest) (*data.PassResult, error) {
	n, p := ds.X.Dims()
	clip := req.Params["clip"]
	sum := make([]float64, p)
	mom := make([]float64, p*p)
	w := make([]float64, p)
	for i := 0; i < n; i++ {
		if i%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		copy(w, ds.X.RawRowView(i))
		if clip > 0 {
			if nx := floats.Norm(w, 2); nx > clip {
				floats.Scale(clip/nx, w)
			}
		}
		floats.Add(sum, w)
		for a, va := range w {
			if va == 0 {
				continue
			}
			floats.AddScaled(mom[a*p:(a+1)*p], va, w)
		}
	}
	return &data.PassResult{Records: int64(n), Outputs: []data.Array{
		{Name: "sum", Rows: 1, Cols: p, Data: sum}, {Name: "moment", Rows: p, Cols: p, Data: mom}}}, nil
}
