package lake

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestIcebergFork keeps third_party/iceberg-go honest: it must be the
// iceberg-go module of the version go.mod requires (ICEBERG_VERSION), file
// for file, with only the files patches.diff names differing (and each of
// those differing), and go.mod must build with it. After an iceberg-go
// upgrade it fails until scripts/iceberg-fork.sh is run again.
func TestIcebergFork(t *testing.T) {
	const mod = "github.com/apache/iceberg-go"
	const fork = "../third_party/iceberg-go"
	out, err := exec.Command("go", "list", "-m", "-json", mod).Output()
	if err != nil {
		t.Skipf("go list -m %s: %v", mod, err)
	}
	var m struct {
		Version string
		Replace *struct{ Path, Dir string }
	}
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	if m.Replace == nil || m.Replace.Path != "./third_party/iceberg-go" {
		t.Fatalf("go.mod does not replace %s with ./third_party/iceberg-go: %+v", mod, m.Replace)
	}
	have, err := os.ReadFile(filepath.Join(fork, "ICEBERG_VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(have)); got != m.Version {
		t.Fatalf("the copy is of iceberg-go %s, go.mod requires %s: run scripts/iceberg-fork.sh", got, m.Version)
	}
	dl, err := exec.Command("go", "mod", "download", "-json", mod+"@"+m.Version).Output()
	if err != nil {
		t.Skipf("go mod download %s@%s: %v (no module source to compare with)", mod, m.Version, err)
	}
	var src struct{ Dir string }
	if err := json.Unmarshal(dl, &src); err != nil || src.Dir == "" {
		t.Skipf("go mod download %s@%s: no directory (%v)", mod, m.Version, err)
	}
	diff, err := os.ReadFile(filepath.Join(fork, "patches.diff"))
	if err != nil {
		t.Fatal(err)
	}
	patched := map[string]bool{}
	for _, p := range regexp.MustCompile(`(?m)^\+\+\+ b/(\S+)`).FindAllSubmatch(diff, -1) {
		patched[string(p[1])] = true
	}
	if len(patched) == 0 {
		t.Fatal("patches.diff patches nothing: the copy has no reason to be")
	}
	var copied []string
	err = filepath.WalkDir(fork, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(fork, p)
		rel = filepath.ToSlash(rel)
		switch rel {
		case "ICEBERG_VERSION", "patches.diff", "README.md":
			return nil
		}
		copied = append(copied, rel)
		got, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		want, err := os.ReadFile(filepath.Join(src.Dir, rel))
		if err != nil {
			t.Errorf("%s: not in iceberg-go %s: %v", rel, m.Version, err)
			return nil
		}
		switch same := bytes.Equal(got, want); {
		case !same && !patched[rel]:
			t.Errorf("%s differs from iceberg-go %s's but patches.diff does not patch it: run scripts/iceberg-fork.sh (or scripts/iceberg-fork.sh --diff > third_party/iceberg-go/patches.diff)", rel, m.Version)
		case same && patched[rel]:
			t.Errorf("%s is iceberg-go %s's unchanged but patches.diff patches it: the patch is lost", rel, m.Version)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(copied)
	for _, want := range []string{"LICENSE", "NOTICE", "go.mod", "table/substrait/substrait.go"} {
		if i := sort.SearchStrings(copied, want); i == len(copied) || copied[i] != want {
			t.Errorf("the copy lacks %s", want)
		}
	}
}
