package cli

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/client"
)

// writeJSON writes v as indented JSON (HTML characters unescaped), for
// values that hold only finite numbers: catalogues, audit reports.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeReportJSON writes v as indented JSON followed by a newline. Unlike
// encoding/json it accepts NaN and ±Inf float values anywhere in v (struct
// fields, maps, slices, pointers, interfaces) and writes them as the
// strings "NaN", "Infinity" and "-Infinity" (the spellings JavaScript and
// Python's float() accept). Struct fields follow encoding/json's tag rules
// (name, omitempty, "-") and keep their declaration order; values
// implementing json.Marshaler marshal themselves; gonum matrices
// (mat.Matrix) become arrays of rows.
func writeReportJSON(w io.Writer, v any) error {
	tree, err := jsonTree(reflect.ValueOf(v), 0)
	if err != nil {
		return fmt.Errorf("json: %w", err)
	}
	b, err := json.Marshal(tree)
	if err != nil {
		return fmt.Errorf("json: %w", err)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		return fmt.Errorf("json: %w", err)
	}
	buf.WriteByte('\n')
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("json: %w", err)
	}
	return nil
}

// writeListJSON is writeReportJSON for a list: an empty one is [], not
// null.
func writeListJSON[T any](w io.Writer, v []T) error {
	if v == nil {
		v = []T{}
	}
	return writeReportJSON(w, v)
}

// saveReportJSON writes v as writeReportJSON does to path, atomically (a
// temporary file in the same directory renamed into place).
func saveReportJSON(path string, v any) error {
	return client.WriteFileAtomic(path, func(w io.Writer) error { return writeReportJSON(w, v) })
}

// orderedObject is a JSON object that keeps its key order.
type orderedObject []keyValue

type keyValue struct {
	key   string
	value any
}

func (o orderedObject) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, kv := range o {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, err := json.Marshal(kv.key)
		if err != nil {
			return nil, err
		}
		buf.Write(k)
		buf.WriteByte(':')
		val, err := json.Marshal(kv.value)
		if err != nil {
			return nil, err
		}
		buf.Write(val)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

var (
	marshalerType = reflect.TypeFor[json.Marshaler]()
	matrixType    = reflect.TypeFor[mat.Matrix]()
)

// jsonTree converts v into values encoding/json can marshal.
func jsonTree(v reflect.Value, depth int) (any, error) {
	if depth > 200 {
		return nil, fmt.Errorf("value nested more than 200 levels (cyclic?)")
	}
	if !v.IsValid() {
		return nil, nil
	}
	if v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, nil
		}
	}
	if v.Type().Implements(matrixType) {
		m := v.Interface().(mat.Matrix)
		r, c := m.Dims()
		rows := make([]any, r)
		for i := 0; i < r; i++ {
			row := make([]any, c)
			for j := 0; j < c; j++ {
				row[j] = floatValue(m.At(i, j))
			}
			rows[i] = row
		}
		return rows, nil
	}
	if v.Type().Implements(marshalerType) {
		return v.Interface(), nil
	}
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		return jsonTree(v.Elem(), depth+1)
	case reflect.Float32, reflect.Float64:
		return floatValue(v.Float()), nil
	case reflect.Slice:
		if v.IsNil() {
			return nil, nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return v.Interface(), nil // base64, as encoding/json does
		}
		fallthrough
	case reflect.Array:
		out := make([]any, v.Len())
		for i := range out {
			e, err := jsonTree(v.Index(i), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	case reflect.Map:
		if v.IsNil() {
			return nil, nil
		}
		out := make(map[string]any, v.Len())
		it := v.MapRange()
		for it.Next() {
			k, err := mapKey(it.Key())
			if err != nil {
				return nil, err
			}
			e, err := jsonTree(it.Value(), depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = e
		}
		return out, nil
	case reflect.Struct:
		obj := orderedObject{}
		if err := structFields(v, depth, &obj); err != nil {
			return nil, err
		}
		return obj, nil
	case reflect.Complex64, reflect.Complex128, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return nil, fmt.Errorf("unsupported type %s", v.Type())
	}
	return v.Interface(), nil
}

// floatValue is f, or the string that spells a non-finite f.
func floatValue(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return f
}

func mapKey(k reflect.Value) (string, error) {
	if k.Kind() == reflect.String {
		return k.String(), nil
	}
	b, err := json.Marshal(k.Interface())
	if err != nil {
		return "", err
	}
	return strings.Trim(string(b), `"`), nil
}

// structFields appends the exported fields of struct v to obj, inlining
// untagged embedded structs as encoding/json does.
func structFields(v reflect.Value, depth int, obj *orderedObject) error {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		fv := v.Field(i)
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
				if fv.IsNil() {
					continue
				}
				fv = fv.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if err := structFields(fv, depth+1, obj); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		name = cmp.Or(name, f.Name)
		if strings.Contains(","+opts+",", ",omitempty,") && isEmptyValue(fv) {
			continue
		}
		e, err := jsonTree(fv, depth+1)
		if err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		*obj = append(*obj, keyValue{name, e})
	}
	return nil
}

// isEmptyValue mirrors encoding/json's notion of empty for omitempty.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}
