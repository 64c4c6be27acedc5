package linalg

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"kvq/gguf"
)

// ErrUnsupportedType is returned (wrapped) for a weight type the package cannot multiply.
var ErrUnsupportedType = errors.New("linalg: unsupported weight type")

// ErrShape is returned (wrapped) when sizes of a matrix or of the vectors passed with it
// do not agree.
var ErrShape = errors.New("linalg: shape mismatch")

// Matrix is a row-major weight matrix: Rows rows of Cols values, row r stored in
// Data[r*RowBytes : (r+1)*RowBytes] where RowBytes = Type.RowBytes(Cols). This is GGUF's
// layout for a tensor of shape ne=[Cols, Rows]. Data is only read, never written or
// retained beyond the call that uses it, so it may point into a read-only mapping.
type Matrix struct {
	Type       gguf.TensorType
	Rows, Cols int
	Data       []byte

	// tables holds what many-token kernels derive from the rows once (see
	// rowTables), shared by copies of a Matrix made by NewMatrix; nil otherwise (the
	// kernels then derive it per call).
	tables *rowTables
}

// rowTables is what a many-token kernel derives from a matrix's rows once, at its
// first use, and keeps while the Matrix lives: for Q8_0, per 8-row tile and block, the
// block scales and code sums (q8PrepZ's table, 4 bytes per 32 weights), for rows up to
// the last whole 4 rows.
type rowTables struct {
	once sync.Once
	ent  []uint32
}

// NewMatrix returns the Matrix of rows×cols values of type t stored in data, after checking
// that the package can multiply type t, that cols is a whole number of t's blocks and that
// data holds exactly rows rows. The data is not copied.
func NewMatrix(t gguf.TensorType, rows, cols int, data []byte) (Matrix, error) {
	m := Matrix{Type: t, Rows: rows, Cols: cols, Data: data, tables: &rowTables{}}
	if err := m.check(); err != nil {
		return Matrix{}, err
	}
	return m, nil
}

// Supports reports whether MatMul can multiply weights of type t.
func Supports(t gguf.TensorType) bool {
	switch t {
	case gguf.TypeF32, gguf.TypeF16, gguf.TypeQ8_0, gguf.TypeQ4_0:
		return true
	}
	return dequantizerFor(t) != nil
}

// Native reports whether MatMul multiplies weights of type t with kernels of their
// own (F32, F16, Q8_0, Q4_0, Q5_0, Q4_K, Q6_K) rather than by dequantizing each row
// into float32 first, which is many times slower (Q5_0 took 18 times as long that
// way on a 2048×768 decode product).
func Native(t gguf.TensorType) bool {
	return t == gguf.TypeF32 || t == gguf.TypeF16 || quantTypes[t] != nil
}

// RowBytes returns the bytes of one row of m.
func (m Matrix) RowBytes() (int, error) {
	rb, err := m.Type.RowBytes(m.Cols)
	if err != nil {
		return 0, fmt.Errorf("linalg: %v matrix with %d columns: %w: %w", m.Type, m.Cols, ErrShape, err)
	}
	return rb, nil
}

// check validates m: a supported type, non-negative sizes, whole blocks per row and
// exactly Rows rows of data.
func (m Matrix) check() error {
	if !Supports(m.Type) {
		return fmt.Errorf("%w %v (supported: F32, F16, Q8_0, Q4_0%s)", ErrUnsupportedType, m.Type, dequantNote())
	}
	if m.Rows < 0 || m.Cols < 0 {
		return fmt.Errorf("linalg: %w: negative size %d×%d", ErrShape, m.Rows, m.Cols)
	}
	rb, err := m.RowBytes()
	if err != nil {
		return err
	}
	if rb > 0 && m.Rows > math.MaxInt/rb {
		return fmt.Errorf("linalg: %w: %d rows of %d bytes overflow", ErrShape, m.Rows, rb)
	}
	if want := m.Rows * rb; len(m.Data) != want {
		return fmt.Errorf("linalg: %w: %v matrix %d×%d needs %d bytes of data, got %d",
			ErrShape, m.Type, m.Rows, m.Cols, want, len(m.Data))
	}
	return nil
}
