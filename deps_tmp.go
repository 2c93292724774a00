package relabel

import (
	_ "github.com/apache/arrow-go/v18/parquet/pqarrow"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	_ "gonum.org/v1/gonum/blas/blas32"
	_ "gonum.org/v1/netlib/blas/netlib"
	_ "cloud.google.com/go/storage"
)

