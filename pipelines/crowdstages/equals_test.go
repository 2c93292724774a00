package crowdstages

import (
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
)

func equals(s beam.Scope, got beam.PCollection, want []any) {
	passert.Equals(s, got, want...)
}

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*collectFn)(nil)).Elem())
	register.Emitter1[string]()
}
