package schemas

import (
	"hash/fnv"
	"testing"
)

func TestKeyIsFNV1a(t *testing.T) {
	for _, s := range []string{"", "a", "id-000017", "ünïcode", string([]byte{0, 255})} {
		h := fnv.New64a()
		h.Write([]byte(s))
		if got, want := Key(s), int64(h.Sum64()); got != want {
			t.Errorf("Key(%q) = %d, want %d (hash/fnv New64a)", s, got, want)
		}
	}
	if Key("a") == Key("b") {
		t.Error(`Key("a") == Key("b")`)
	}
}
