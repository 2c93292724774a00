package annotators

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/relabel/relabel/quality/annotators/crowdset"
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

const qualityCmd = "go test ./quality/annotators -run TestQualityCrowd -update"

// TestQualityCrowd measures every crowd set, shared and generated, checks
// issues 17's, 33's and 48's targets and that docs/QUALITY_CROWD.md holds these
// figures up to its timings (-update rewrites it). It needs ../shared and
// takes about two minutes on an idle 2-core machine.
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
		t.Logf("%-18s MV %.3f (ours %.3f) DS %.3f (ours %.3f) crowd %.3f crowd+features %.3f relabel %.3f flagged %d/%d", name, p.MV, r.MV, p.DS, r.DS, r.Crowd, r.CrowdFeatures, r.Relabel, r.Spammers, r.Adversaries)
		rows = append(rows, r)
	}
	for _, g := range crowdset.Gens {
		r, err := MeasureGen(g)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-18s MV %.3f DS %.3f crowd %.3f (%.1f s) flagged %d/%d, %d not judged", g.Name, r.Peers.MV, r.DS, r.Crowd, r.CrowdSeconds, r.Spammers, r.Adversaries, r.TooFew)
		rows = append(rows, r)
	}
	for _, m := range Targets(rows) {
		t.Errorf("target missed: %s", m)
	}
	load := "load average unknown"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = fmt.Sprintf("%d cores, load average %s (1, 5, 15 min) when it ended", runtime.NumCPU(), strings.Join(strings.Fields(string(b))[:3], ", "))
	}
	apart, err := os.ReadFile(ApartFile)
	if err != nil {
		t.Fatal(err)
	}
	md := Markdown(rows, qualityCmd, load, string(apart))
	path := filepath.Join("..", "..", "docs", "QUALITY_CROWD.md")
	if *update {
		if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	upTo := func(s string) string { return s[:max(0, strings.Index(s, TimingsHeading))] }
	if err != nil || upTo(string(got)) != upTo(md) {
		t.Errorf("%s is not up to date (err %v): run %s", path, err, qualityCmd)
	}
}
