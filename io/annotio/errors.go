package annotio

import "fmt"

// InputError is a problem with the input data: the file, the row within it
// (counted from 0 at its first row; -1 when the problem is not one row's)
// and the column ("" when not one column's).
type InputError struct {
	Path   string
	Row    int64
	Column string
	Msg    string
	Err    error
}

func (e *InputError) Error() string {
	s := "annotio: " + e.Path
	if e.Row >= 0 {
		s += fmt.Sprintf(" row %d", e.Row)
	}
	if e.Column != "" {
		s += fmt.Sprintf(" column %q", e.Column)
	}
	return s + ": " + e.Msg
}

func (e *InputError) Unwrap() error { return e.Err }

func fileError(path string, err error, format string, args ...any) *InputError {
	msg := fmt.Sprintf(format, args...)
	if err != nil {
		msg += ": " + err.Error()
	}
	return &InputError{Path: path, Row: -1, Msg: msg, Err: err}
}

func columnError(path, column, format string, args ...any) *InputError {
	return &InputError{Path: path, Row: -1, Column: column, Msg: fmt.Sprintf(format, args...)}
}

func rowError(path string, row int64, column, format string, args ...any) *InputError {
	return &InputError{Path: path, Row: row, Column: column, Msg: fmt.Sprintf(format, args...)}
}

// corrupt turns a panic of the Arrow readers on a corrupt file into an error.
func corrupt(path string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("annotio: %s: corrupt file (%v)", path, r)
	}
}
