package stats

import (
	"fmt"
	"strings"
)

func traceCSV(x [][]float64, y []float64) string {
	var b strings.Builder
	for j := range x[0] {
		fmt.Fprintf(&b, "x%d,", j)
	}
	b.WriteString("y\n")
	for i := range x {
		for _, v := range x[i] {
			b.WriteString(strconvFormat(v) + ",")
		}
		b.WriteString(strconvFormat(y[i]) + "\n")
	}
	return b.String()
}
