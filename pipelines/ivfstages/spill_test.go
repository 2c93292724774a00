package ivfstages

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestSpillRoundTrip: a spilled block and its messages come back exactly,
// from one file per block; a missing or mismatched file is an error that
// names the spill, never a silently empty block.
func TestSpillRoundTrip(t *testing.T) {
	sp := Spill{Dir: t.TempDir()}
	b := Block{Key: 7<<24 | 1, Keys: []int64{3, 5, 9}, Shards: []string{"a.parquet"}, Src: []int32{0, 0, 0},
		Offset: []int64{0, 0, 0}, Row: []int32{2, 0, 1}, Labels: []int32{1, 2, 0}, LabelOff: []int32{0, 1, 2, 3},
		K: 1, Nbr: []int32{1, -2, 0}, Weight: []float64{1, 1, 1}, ExtKeys: []int64{11}, ExtHome: []int64{8 << 24}}
	b.State.Reset()
	b.Init.Reset()
	msgs := []JoinMsg{{From: b.Key, Keys: []int64{3}}, {From: b.Key, Keys: []int64{5, 9}}}
	for i := range msgs {
		msgs[i].States.Reset()
	}
	wantB, wantM := b, append([]JoinMsg(nil), msgs...)
	// What the coders keep of an empty-but-reset state, for the comparison.
	wantB, _ = decodeBlock(encodeBlock(wantB))
	for i := range wantM {
		wantM[i], _ = decodeJoinMsg(encodeJoinMsg(wantM[i]))
	}
	if err := sp.put(3, &b, msgs); err != nil {
		t.Fatal(err)
	}
	if b.Keys != nil || b.Spilled.Path == "" || msgs[1].Keys != nil || msgs[1].Spilled.Path != b.Spilled.Path {
		t.Fatalf("put left contents inline: block %+v, message %+v", b, msgs[1])
	}
	handle := b
	if err := b.unspill(); err != nil || !reflect.DeepEqual(b, wantB) {
		t.Errorf("block back from the spill: %+v (err %v), want %+v", b, err, wantB)
	}
	for i := range msgs {
		if err := msgs[i].unspill(); err != nil || !reflect.DeepEqual(msgs[i], wantM[i]) {
			t.Errorf("message %d back from the spill: %+v (err %v), want %+v", i, msgs[i], err, wantM[i])
		}
	}

	wrong := handle
	wrong.Key++
	if err := wrong.unspill(); err == nil || !strings.Contains(err.Error(), "holds block") {
		t.Errorf("block under another key: err %v, want a mismatch", err)
	}
	if err := sp.drop(3); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sp.genDir(3)); !os.IsNotExist(err) {
		t.Errorf("generation 3 after drop: %v", err)
	}
	if err := handle.unspill(); err == nil || !strings.Contains(err.Error(), "ivfstages: spill") {
		t.Errorf("block whose file is gone: err %v, want a spill error", err)
	}
}
