package gguf

import (
	"fmt"
	"math"
)

// ValueType is the type tag of a GGUF metadata value, as stored in the file (u32).
type ValueType uint32

// Metadata value types. The numeric values are GGUF's.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = [...]string{"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"}

// String returns a short name of the type ("u32", "string", ...), or "vtype(N)".
func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("vtype(%d)", uint32(t))
}

// valid reports whether t is a type GGUF defines.
func (t ValueType) valid() bool { return t <= TypeFloat64 }

// size is the encoded size in bytes of a fixed-size scalar of type t, or 0 for
// strings and arrays.
func (t ValueType) size() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// minSize is the smallest number of bytes one value of type t can occupy in a file:
// a string is at least its u64 length, an array at least its element type (u32) and
// count (u64). It bounds how many values the remaining bytes can hold.
func (t ValueType) minSize() int {
	switch t {
	case TypeString:
		return 8
	case TypeArray:
		return 12
	}
	return t.size()
}

// Value is one metadata value.
//
// Data holds, by Type:
//
//	TypeUint8..TypeFloat64 scalars  uint8, int8, uint16, int16, uint32, int32, float32, bool,
//	                                uint64, int64, float64 (the Go type of the same width)
//	TypeString                      string
//	TypeArray                       a slice of the element's Go type ([]uint8, []float32,
//	                                []string, []bool, ...) when Elem is a scalar or string
//	                                type, or []Value (each itself an array) when Elem is
//	                                TypeArray
//
// Slices returned by a parsed File are shared with it; callers must not modify them.
type Value struct {
	Type ValueType
	Elem ValueType // element type when Type is TypeArray
	Data any
}

// ValueOf builds a Value from a Go value of one of the types listed on Value (scalars,
// string, typed slices, or []Value for an array of arrays, whose elements must all be
// arrays). It returns an error naming the Go type for anything else.
func ValueOf(x any) (Value, error) {
	switch v := x.(type) {
	case Value:
		return v, v.check(0)
	case uint8:
		return Value{Type: TypeUint8, Data: v}, nil
	case int8:
		return Value{Type: TypeInt8, Data: v}, nil
	case uint16:
		return Value{Type: TypeUint16, Data: v}, nil
	case int16:
		return Value{Type: TypeInt16, Data: v}, nil
	case uint32:
		return Value{Type: TypeUint32, Data: v}, nil
	case int32:
		return Value{Type: TypeInt32, Data: v}, nil
	case float32:
		return Value{Type: TypeFloat32, Data: v}, nil
	case bool:
		return Value{Type: TypeBool, Data: v}, nil
	case string:
		return Value{Type: TypeString, Data: v}, nil
	case uint64:
		return Value{Type: TypeUint64, Data: v}, nil
	case int64:
		return Value{Type: TypeInt64, Data: v}, nil
	case float64:
		return Value{Type: TypeFloat64, Data: v}, nil
	case []uint8:
		return Value{Type: TypeArray, Elem: TypeUint8, Data: v}, nil
	case []int8:
		return Value{Type: TypeArray, Elem: TypeInt8, Data: v}, nil
	case []uint16:
		return Value{Type: TypeArray, Elem: TypeUint16, Data: v}, nil
	case []int16:
		return Value{Type: TypeArray, Elem: TypeInt16, Data: v}, nil
	case []uint32:
		return Value{Type: TypeArray, Elem: TypeUint32, Data: v}, nil
	case []int32:
		return Value{Type: TypeArray, Elem: TypeInt32, Data: v}, nil
	case []float32:
		return Value{Type: TypeArray, Elem: TypeFloat32, Data: v}, nil
	case []bool:
		return Value{Type: TypeArray, Elem: TypeBool, Data: v}, nil
	case []string:
		return Value{Type: TypeArray, Elem: TypeString, Data: v}, nil
	case []uint64:
		return Value{Type: TypeArray, Elem: TypeUint64, Data: v}, nil
	case []int64:
		return Value{Type: TypeArray, Elem: TypeInt64, Data: v}, nil
	case []float64:
		return Value{Type: TypeArray, Elem: TypeFloat64, Data: v}, nil
	case []Value:
		val := Value{Type: TypeArray, Elem: TypeArray, Data: v}
		return val, val.check(0)
	}
	return Value{}, fmt.Errorf("gguf: no metadata type for Go type %T", x)
}

// maxDepth bounds the nesting of arrays of arrays, in files and in values to write.
const maxDepth = 16

// check verifies that Data has the Go type that Type and Elem call for.
func (v Value) check(depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("gguf: arrays nested deeper than %d", maxDepth)
	}
	if _, nested := v.Data.(Value); nested {
		return fmt.Errorf("gguf: value of type %v holds a gguf.Value", v.Type)
	}
	if v.Type == TypeArray {
		if v.Elem == TypeArray {
			elems, ok := v.Data.([]Value)
			if !ok {
				return fmt.Errorf("gguf: array of arrays holds %T, want []gguf.Value", v.Data)
			}
			for i, e := range elems {
				if e.Type != TypeArray {
					return fmt.Errorf("gguf: element %d of an array of arrays has type %v", i, e.Type)
				}
				if err := e.check(depth + 1); err != nil {
					return fmt.Errorf("gguf: element %d: %w", i, err)
				}
			}
			return nil
		}
		want, err := ValueOf(v.Data)
		if err != nil || want.Type != TypeArray || want.Elem != v.Elem {
			return fmt.Errorf("gguf: array of %v holds %T", v.Elem, v.Data)
		}
		return nil
	}
	want, err := ValueOf(v.Data)
	if err != nil || want.Type != v.Type {
		return fmt.Errorf("gguf: value of type %v holds %T", v.Type, v.Data)
	}
	return nil
}

// Len returns the number of elements of an array value, or 0 for a scalar.
func (v Value) Len() int {
	switch d := v.Data.(type) {
	case []uint8:
		return len(d)
	case []int8:
		return len(d)
	case []uint16:
		return len(d)
	case []int16:
		return len(d)
	case []uint32:
		return len(d)
	case []int32:
		return len(d)
	case []float32:
		return len(d)
	case []bool:
		return len(d)
	case []string:
		return len(d)
	case []uint64:
		return len(d)
	case []int64:
		return len(d)
	case []float64:
		return len(d)
	case []Value:
		return len(d)
	}
	return 0
}

// asInt64 returns a scalar integer value as int64; ok is false for non-integers and
// for uint64 values above math.MaxInt64.
func asInt64(x any) (int64, bool) {
	switch v := x.(type) {
	case uint8:
		return int64(v), true
	case int8:
		return int64(v), true
	case uint16:
		return int64(v), true
	case int16:
		return int64(v), true
	case uint32:
		return int64(v), true
	case int32:
		return int64(v), true
	case int64:
		return v, true
	case uint64:
		if v > math.MaxInt64 {
			return 0, false
		}
		return int64(v), true
	}
	return 0, false
}

// asUint64 returns a scalar integer value as uint64; ok is false for non-integers and
// negative values.
func asUint64(x any) (uint64, bool) {
	if v, ok := x.(uint64); ok {
		return v, true
	}
	i, ok := asInt64(x)
	if !ok || i < 0 {
		return 0, false
	}
	return uint64(i), true
}
