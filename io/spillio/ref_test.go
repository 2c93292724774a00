package spillio

import (
	"errors"
	"strings"
	"testing"

	"github.com/relabel/relabel/schemas/wire"
)

// TestRef: a reference survives its wire encoding; Load decodes what it
// points to and names the file when the decoder refuses; Last decodes a
// reference once and again only for another one.
func TestRef(t *testing.T) {
	d := Dir(t.TempDir())
	refs, err := d.Write(0, "x", []byte("alpha"), []byte("beta"))
	if err != nil {
		t.Fatal(err)
	}
	var w wire.Writer
	PutRef(&w, refs[1])
	PutRef(&w, Ref{})
	r := wire.Reader{B: w.B}
	if got, zero := GetRef(&r), GetRef(&r); r.Err() != nil || got != refs[1] || zero != (Ref{}) {
		t.Errorf("GetRef = %+v, %+v, %v; want %+v and the zero Ref", got, zero, r.Err(), refs[1])
	}
	decodes := 0
	decode := func(b []byte) (*string, error) {
		decodes++
		s := string(b) // a copy: b goes back to the pool
		if s == "beta" {
			return nil, errors.New("bad beta")
		}
		return &s, nil
	}
	if v, err := Load(refs[0], decode); err != nil || *v != "alpha" {
		t.Errorf("Load = %v, %v; want alpha", v, err)
	}
	if _, err := Load(refs[1], decode); err == nil || !strings.Contains(err.Error(), refs[1].Path) || !strings.Contains(err.Error(), "bad beta") {
		t.Errorf("Load of a refused element: %v, want the decoder's error naming %s", err, refs[1].Path)
	}
	var last Last[string]
	decodes = 0
	for range 3 {
		if v, err := last.Get(refs[0], decode); err != nil || *v != "alpha" {
			t.Fatalf("Last.Get = %v, %v", v, err)
		}
	}
	if decodes != 1 {
		t.Errorf("%d decodes of one reference, want 1", decodes)
	}
	if _, err := last.Get(refs[1], decode); err == nil || decodes != 2 {
		t.Errorf("another reference: %v after %d decodes, want an error after 2", err, decodes)
	}
}
