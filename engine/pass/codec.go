package pass

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"

	"github.com/dplr/dplr/engine/data"
)

// The codec between a kind's typed request and result and the wire forms
// data.PassRequest and data.PassResult. A field of a request or result
// struct travels when it is tagged `pass:"name"` (fields of embedded
// structs too): a []float64 as the array called name (its shape is the
// kind's Inputs or Outputs), a float64, int, int64, uint64 or bool as the
// scalar called name (a request's parameter, a result's scalar; an integer
// must be a whole number below 2⁵³, a bool 0 or 1). A result's untagged
// int64 field Records is its record count. Nothing else reads a request's
// parameters or a result's scalars by name.

// field is one tagged field.
type field struct {
	name  string
	index []int
	kind  reflect.Kind
}

// codec lists a struct type's tagged fields.
type codec struct {
	scalars, arrays []field
	records         []int // the Records field (nil: none)
}

var codecs sync.Map // reflect.Type → *codec

// codecOf returns the codec of struct type t.
func codecOf(t reflect.Type) *codec {
	if c, ok := codecs.Load(t); ok {
		return c.(*codec)
	}
	c := &codec{}
	c.walk(t, nil)
	codecs.Store(t, c)
	return c
}

// walk adds t's tagged fields (under the index path at).
func (c *codec) walk(t reflect.Type, at []int) {
	for i := range t.NumField() {
		f := t.Field(i)
		idx := append(append([]int(nil), at...), i)
		name, tagged := f.Tag.Lookup("pass")
		switch {
		case f.Anonymous && f.Type.Kind() == reflect.Struct:
			c.walk(f.Type, idx)
		case !tagged:
			if f.Name == "Records" && f.Type.Kind() == reflect.Int64 {
				c.records = idx
			}
		case f.Type == reflect.TypeOf([]float64(nil)):
			c.arrays = append(c.arrays, field{name, idx, reflect.Slice})
		default:
			switch k := f.Type.Kind(); k {
			case reflect.Float64, reflect.Int, reflect.Int64, reflect.Uint64, reflect.Bool:
				c.scalars = append(c.scalars, field{name, idx, k})
			default:
				panic("pass: field " + f.Name + " of " + t.Name() + " has no wire form")
			}
		}
	}
}

// scalarsOf returns the tagged scalars of the struct v (nil: none).
func (c *codec) scalarsOf(v reflect.Value) map[string]float64 {
	if len(c.scalars) == 0 {
		return nil
	}
	out := make(map[string]float64, len(c.scalars))
	for _, f := range c.scalars {
		fv := v.FieldByIndex(f.index)
		switch f.kind {
		case reflect.Float64:
			out[f.name] = fv.Float()
		case reflect.Int, reflect.Int64:
			out[f.name] = float64(fv.Int())
		case reflect.Uint64:
			out[f.name] = float64(fv.Uint())
		case reflect.Bool:
			out[f.name] = 0
			if fv.Bool() {
				out[f.name] = 1
			}
		}
	}
	return out
}

// setScalars sets the struct v's tagged scalars from m: every one present,
// finite and of its field's type, and no other.
func (c *codec) setScalars(what string, v reflect.Value, m map[string]float64) error {
	for name, x := range m {
		i := c.find(c.scalars, name)
		if i < 0 {
			return fmt.Errorf("unknown %s %q", what, name)
		}
		f := c.scalars[i]
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%s %s = %v is not finite", what, name, x)
		}
		whole := x == math.Trunc(x) && math.Abs(x) < 1<<53
		fv := v.FieldByIndex(f.index)
		switch f.kind {
		case reflect.Float64:
			fv.SetFloat(x)
		case reflect.Int, reflect.Int64:
			if !whole {
				return fmt.Errorf("%s %s = %v is not an integer", what, name, x)
			}
			fv.SetInt(int64(x))
		case reflect.Uint64:
			if !whole || x < 0 {
				return fmt.Errorf("%s %s = %v is not an integer in [0, 2⁵³)", what, name, x)
			}
			fv.SetUint(uint64(x))
		case reflect.Bool:
			if x != 0 && x != 1 {
				return fmt.Errorf("%s %s = %v is not 0 or 1", what, name, x)
			}
			fv.SetBool(x == 1)
		}
	}
	if len(m) != len(c.scalars) {
		for _, f := range c.scalars {
			if _, ok := m[f.name]; !ok {
				return fmt.Errorf("%s %s missing", what, f.name)
			}
		}
	}
	return nil
}

// find returns the index of the field called name in fs, or -1.
func (c *codec) find(fs []field, name string) int {
	for i, f := range fs {
		if f.name == name {
			return i
		}
	}
	return -1
}

// arraysOf returns the struct v's arrays listed in want, in its order,
// with their shapes (a nil field: zeros).
func (c *codec) arraysOf(v reflect.Value, want []ArraySpec) []data.Array {
	if len(want) == 0 {
		return nil
	}
	out := make([]data.Array, len(want))
	for k, w := range want {
		var d []float64
		if i := c.find(c.arrays, w.Name); i >= 0 {
			d = v.FieldByIndex(c.arrays[i].index).Interface().([]float64)
		}
		if d == nil {
			d = make([]float64, w.Rows*w.Cols)
		}
		out[k] = data.Array{Name: w.Name, Rows: w.Rows, Cols: w.Cols, Data: d}
	}
	return out
}

// setArrays sets the struct v's arrays from got (shared, not copied): each
// one a tagged field, at most once.
func (c *codec) setArrays(what string, v reflect.Value, got []data.Array) error {
	for k, a := range got {
		i := c.find(c.arrays, a.Name)
		if i < 0 {
			return fmt.Errorf("unknown %s %q", what, a.Name)
		}
		for _, b := range got[:k] {
			if b.Name == a.Name {
				return fmt.Errorf("%s %s given twice", what, a.Name)
			}
		}
		v.FieldByIndex(c.arrays[i].index).Set(reflect.ValueOf(a.Data))
	}
	return nil
}

// checkArrays checks that got holds exactly the arrays want lists, in
// order, each of its shape and finite.
func checkArrays(what string, want []ArraySpec, got []data.Array) error {
	if len(got) != len(want) {
		names := make([]string, len(want))
		for i, w := range want {
			names[i] = w.Name
		}
		return fmt.Errorf("%d %ss, want [%s]", len(got), what, strings.Join(names, " "))
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.Name {
			return fmt.Errorf("%s %d is %q, want %q", what, i, g.Name, w.Name)
		}
		if g.Rows != w.Rows || g.Cols != w.Cols {
			return fmt.Errorf("%s %s is %d×%d, want %d×%d", what, w.Name, g.Rows, g.Cols, w.Rows, w.Cols)
		}
		if err := g.Check(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil
}

// AddResults adds the result o into a, both results of the same request
// of a kind whose outputs and scalars are all sums over records (the rows
// and trace kinds): the records, every output entry and every scalar. A
// Beam combiner uses it to add the partial results of shards.
func AddResults(a *data.PassResult, o data.PassResult) {
	a.Records += o.Records
	for i, x := range o.Outputs {
		for j, v := range x.Data {
			a.Outputs[i].Data[j] += v
		}
	}
	for name, v := range o.Scalars {
		a.Scalars[name] += v
	}
}
