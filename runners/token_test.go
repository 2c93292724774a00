package runners

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// TestWorkerTokenEnv: the worker pool token's
// environment variables, a new input surface: the file variable wins, a
// token file's trailing newline is dropped, and a short, spaced, non-ASCII
// or unreadable token is refused naming the variable, never echoing the
// token.
func TestWorkerTokenEnv(t *testing.T) {
	good := "0123456789abcdef0123456789abcdef"
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	goodFile := write("good", good+"\n")
	shortFile := write("short", "tiny\n")
	for _, c := range []struct {
		name, file, value string
		want              string // the token, or "error: TEXT" for an error containing TEXT
	}{
		{"none", "", "", ""},
		{"value", "", good, good},
		{"file", goodFile, "", good},
		{"file wins", goodFile, "another-token-of-enough-length", good},
		{"short value", "", "tiny", "error: " + WorkerTokenEnv},
		{"spaced value", "", "0123456789 abcdef0123", "error: printable ASCII"},
		{"newline in value", "", "0123456789abcdef\n0123", "error: printable ASCII"},
		{"non-ASCII value", "", "0123456789abcdefé0123", "error: printable ASCII"},
		{"short file", shortFile, "", "error: " + WorkerTokenFileEnv},
		{"missing file", filepath.Join(dir, "missing"), "", "error: " + WorkerTokenFileEnv},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(WorkerTokenFileEnv, c.file)
			t.Setenv(WorkerTokenEnv, c.value)
			got, err := WorkerToken()
			if want, isErr := strings.CutPrefix(c.want, "error: "); isErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("WorkerToken() = %q, %v; want an error naming %q", got, err, want)
				}
				if c.value != "" && strings.Contains(err.Error(), c.value) {
					t.Errorf("the error echoes the token: %v", err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("WorkerToken() = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// TestValidateWorkerToken: a bad token in the environment is bad usage of
// an EXTERNAL run (Validate), and ignored by the others.
func TestValidateWorkerToken(t *testing.T) {
	t.Setenv(WorkerTokenFileEnv, "")
	t.Setenv(WorkerTokenEnv, "tiny")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ext := Options{EnvironmentType: External, EnvironmentConfig: "localhost:50000", WorkerBinary: self}
	if err := ext.Validate(); err == nil || !strings.Contains(err.Error(), WorkerTokenEnv) {
		t.Errorf("EXTERNAL with a short token: Validate() = %v, want an error naming %s", err, WorkerTokenEnv)
	}
	if err := (Options{}).Validate(); err != nil {
		t.Errorf("LOOPBACK with a short token in the environment: Validate() = %v, want nil", err)
	}
}

// TestAddWorkerToken: the token becomes a parameter of every EXTERNAL
// environment, which job servers forward in StartWorker, and of no other.
func TestAddWorkerToken(t *testing.T) {
	ext, _ := proto.Marshal(&pipepb.ExternalPayload{
		Endpoint: &pipepb.ApiServiceDescriptor{Url: "localhost:50000"},
		Params:   map[string]string{"other": "kept"},
	})
	docker, _ := proto.Marshal(&pipepb.DockerPayload{ContainerImage: "img"})
	p := &pipepb.Pipeline{Components: &pipepb.Components{Environments: map[string]*pipepb.Environment{
		"go":     {Urn: graphx.URNEnvExternal, Payload: ext},
		"docker": {Urn: graphx.URNEnvDocker, Payload: docker},
	}}}
	if err := addWorkerToken(p, "0123456789abcdef"); err != nil {
		t.Fatal(err)
	}
	var got pipepb.ExternalPayload
	if err := proto.Unmarshal(p.GetComponents().GetEnvironments()["go"].GetPayload(), &got); err != nil {
		t.Fatal(err)
	}
	if got.GetParams()[WorkerTokenParam] != "0123456789abcdef" || got.GetParams()["other"] != "kept" || got.GetEndpoint().GetUrl() != "localhost:50000" {
		t.Errorf("EXTERNAL payload after addWorkerToken: %v", &got)
	}
	if string(p.GetComponents().GetEnvironments()["docker"].GetPayload()) != string(docker) {
		t.Errorf("addWorkerToken changed the DOCKER environment")
	}
}
