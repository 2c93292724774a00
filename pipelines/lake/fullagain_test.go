package lake

import (
	"testing"

	"github.com/relabel/relabel/pipelines"
)

// TestFullAgain: a run whose fits are not kept is followed by a full run,
// with the reason said; a run without them is not.
func TestFullAgain(t *testing.T) {
	for _, tc := range []struct {
		name string
		last map[string]string
		want string
	}{
		{"plain", map[string]string{"given-label": "vote"}, ""},
		{"pooled start", map[string]string{pipelines.MetaPooledStart: pipelines.PooledStartOpen}, pooledFull},
		{"head", map[string]string{pipelines.MetaHeadLast: pipelines.HeadLastOn}, headFull},
		{"given-label bayes", map[string]string{"given-label": "bayes"}, givenFull},
	} {
		if got := fullAgain(tc.last); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
