package job

import "strconv"

// Version is relabel's version, recorded in every output.
const Version = "0.1.0"

func fmtF(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
