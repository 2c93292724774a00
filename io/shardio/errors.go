package shardio

import "fmt"

// InputError is a problem with the input data, located as precisely as it
// can be: the file, the row within the shard (absolute, counted from 0 at the
// shard's first row) and the column.
type InputError struct {
	Path string
	// Row is -1 when the problem is not one row's (a schema, a footer).
	Row int64
	// Column is "" when the problem is not one column's.
	Column string
	Msg    string
	// Err is the underlying error, if any (for errors.Is and errors.As).
	Err error
	// Pkg is the reading package the message names first; "" is shardio.
	// io/annotio's errors are this type with Pkg "annotio".
	Pkg string
}

func (e *InputError) Error() string {
	pkg := e.Pkg
	if pkg == "" {
		pkg = "shardio"
	}
	s := pkg + ": " + e.Path
	if e.Row >= 0 {
		s += fmt.Sprintf(" row %d", e.Row)
	}
	if e.Column != "" {
		s += fmt.Sprintf(" column %q", e.Column)
	}
	return s + ": " + e.Msg
}

func (e *InputError) Unwrap() error { return e.Err }

// fileError is a problem with a whole file.
func fileError(path string, err error, format string, args ...any) *InputError {
	msg := fmt.Sprintf(format, args...)
	if err != nil {
		msg += ": " + err.Error()
	}
	return &InputError{Path: path, Row: -1, Msg: msg, Err: err}
}

// rowError is a problem with one value.
func rowError(path string, row int64, column, format string, args ...any) *InputError {
	return &InputError{Path: path, Row: row, Column: column, Msg: fmt.Sprintf(format, args...)}
}

// DuplicateError reports that id (as it prints) appears at path row row of
// column column and already appeared at firstPath row firstRow. ReadUnit
// reports duplicates within one unit; the pipeline, which alone sees all
// shards, reports the others with this.
func DuplicateError(column, id, path string, row int64, firstPath string, firstRow int64) error {
	where := fmt.Sprintf("row %d", firstRow)
	if firstPath != path {
		where = fmt.Sprintf("%s row %d", firstPath, firstRow)
	}
	return rowError(path, row, column, "duplicate id %s (first at %s)", id, where)
}
