package crowdquality

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/QUALITY_CROWD.md")

// dataDir is ../shared/data/crowd relative to the repository root.
func dataDir(t *testing.T) string {
	d := filepath.Join("..", "..", "..", "shared", "data", "crowd")
	if _, err := os.Stat(filepath.Join(d, "README.md")); err != nil {
		t.Skipf("needs the shared data folder %s (../shared relative to the repository root): %v", d, err)
	}
	return d
}

const qualityCmd = "go test ./internal/crowdquality -run TestQualityCrowd -update"

// TestQualityCrowd measures every crowd set, checks issue 17's targets and
// that docs/QUALITY_CROWD.md holds these figures (-update rewrites it). It
// needs ../shared and takes about a minute.
func TestQualityCrowd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the crowd quality run takes about a minute")
	}
	dir := dataDir(t)
	peers, err := ReadPeers(dir)
	if err != nil {
		t.Fatal(err)
	}
	var rows []Row
	for _, name := range Sets {
		p, ok := peers[name]
		if !ok {
			t.Fatalf("%s: no peers' row in %s/README.md", name, dir)
		}
		r, err := Measure(dir, name, p)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-18s MV %.3f (ours %.3f) DS %.3f crowd %.3f crowd+features %.3f relabel %.3f flagged %d/%d", name, p.MV, r.MV, p.DS, r.Crowd, r.CrowdFeatures, r.Relabel, r.Spammers, r.Adversaries)
		rows = append(rows, r)
	}
	for _, m := range Targets(rows) {
		t.Errorf("target missed: %s", m)
	}
	md := Markdown(rows, qualityCmd)
	path := filepath.Join("..", "..", "docs", "QUALITY_CROWD.md")
	if *update {
		if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != md {
		t.Errorf("%s is not up to date (err %v): run %s", path, err, qualityCmd)
	}
}
