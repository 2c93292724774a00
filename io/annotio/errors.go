package annotio

import (
	"fmt"

	"github.com/relabel/relabel/io/shardio"
)

// InputError is a problem with the input data: the file, the row within it
// (counted from 0 at its first row; -1 when the problem is not one row's)
// and the column ("" when not one column's). It is shardio's type, named
// "annotio" in its message (Pkg).
type InputError = shardio.InputError

// Pkg is InputError.Pkg for annotio's errors.
const Pkg = "annotio"

func fileError(path string, err error, format string, args ...any) *InputError {
	msg := fmt.Sprintf(format, args...)
	if err != nil {
		msg += ": " + err.Error()
	}
	return &InputError{Path: path, Row: -1, Msg: msg, Err: err, Pkg: Pkg}
}

func columnError(path, column, format string, args ...any) *InputError {
	return &InputError{Path: path, Row: -1, Column: column, Msg: fmt.Sprintf(format, args...), Pkg: Pkg}
}

func rowError(path string, row int64, column, format string, args ...any) *InputError {
	return &InputError{Path: path, Row: row, Column: column, Msg: fmt.Sprintf(format, args...), Pkg: Pkg}
}

// corrupt turns a panic of the Arrow readers on a corrupt file into an error.
func corrupt(path string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("annotio: %s: corrupt file (%v)", path, r)
	}
}
