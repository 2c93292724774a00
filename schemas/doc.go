// Package schemas is relabel's one data contract: the input and output column
// names and Arrow types, the schema metadata keys, and the plain Go batch
// structs (Rows, Cleaned) that flow between pipeline stages together with
// their bulk binary encodings (the Beam coders). Arrow types stay here and in
// io/; PCollection elements are these structs, never arrow.Record.
package schemas
