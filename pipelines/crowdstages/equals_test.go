package crowdstages

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"

	"github.com/relabel/relabel/pipelines/stages"
)

func equals(s beam.Scope, got beam.PCollection, want []any) {
	passert.Equals(s, got, want...)
}

func init() {
	register.DoFn2x0[stages.Items, func(string)](&collectFn{})
	register.Emitter1[string]()
}
