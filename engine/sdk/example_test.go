package sdk_test

import (
	"fmt"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

type pcaOptions struct {
	sdk.Rank
	sdk.Clip  `default:"1"`
	sdk.Noise `choices:"zcdp,analytic"`
	MeanClip  *float64 `param:"mean_clip" gt:"0" doc:"clip of the mean (default: clip)"`
}

// Check refuses a rank above the number of columns, before any budget is
// touched.
func (o *pcaOptions) Check(s sdk.Shape) error {
	if o.Rank.Value > s.P {
		return fmt.Errorf("rank %d exceeds the %d columns", o.Rank.Value, s.P)
	}
	return nil
}

// The catalogue comes from the options struct; Prepare validates and binds
// a request against it.
func ExampleSpecsOf() {
	specs, _ := sdk.SpecsOf(pcaOptions{})
	for _, s := range specs {
		fmt.Println(s.Name, s.Type, s.Default, s.Required)
	}
	info := sdk.Info{Name: "pca", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantZCDP}, Options: pcaOptions{}}
	opts, _, err := sdk.Prepare(info, map[string]string{"rank": "2", "mean_clip": "0.5"}, sdk.Shape{Kind: data.Rows, N: 100, P: 5})
	o := opts.(*pcaOptions)
	fmt.Println(err, o.Rank.Value, o.Clip.Value, o.Noise.Value, *o.MeanClip)
	_, _, err = sdk.Prepare(info, map[string]string{"rank": "9"}, sdk.Shape{Kind: data.Rows, N: 100, P: 5})
	fmt.Println(sdk.IsBadRequest(err), err)
	// Output:
	// rank int  true
	// clip float 1 false
	// noise string zcdp false
	// mean_clip float  false
	// <nil> 2 1 zcdp 0.5
	// true estimator pca: rank 9 exceeds the 5 columns
}
