package runners

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// The shared secret of an EXTERNAL worker pool (`relabel worker`): the pool
// refuses a StartWorker request that does not carry it. Beam's job servers
// send no credentials of their own, but they forward the environment's
// parameters in StartWorker, so the submitting relabel puts the token there.
const (
	// WorkerTokenEnv holds the token itself.
	WorkerTokenEnv = "RELABEL_WORKER_TOKEN"
	// WorkerTokenFileEnv names a file holding it (preferred over
	// WorkerTokenEnv: a file's mode protects it, and it stays out of the
	// process environment).
	WorkerTokenFileEnv = "RELABEL_WORKER_TOKEN_FILE"
	// WorkerTokenParam is the environment parameter (and gRPC metadata key)
	// that carries the token to the pool.
	WorkerTokenParam = "relabel-worker-token"
	// minTokenLen is the shortest token accepted: a guessable one is none.
	minTokenLen = 16
)

// WorkerToken reads the worker pool token from the environment: the file
// WorkerTokenFileEnv names, else WorkerTokenEnv; "" when neither is set.
func WorkerToken() (string, error) {
	if f := os.Getenv(WorkerTokenFileEnv); f != "" {
		t, err := ReadWorkerToken(f)
		if err != nil {
			return "", fmt.Errorf("%s: %w", WorkerTokenFileEnv, err)
		}
		return t, nil
	}
	t := os.Getenv(WorkerTokenEnv)
	if t == "" {
		return "", nil
	}
	if err := checkToken(t); err != nil {
		return "", fmt.Errorf("%s: %w", WorkerTokenEnv, err)
	}
	return t, nil
}

// ReadWorkerToken reads a token file: its content less surrounding white
// space (a trailing newline).
func ReadWorkerToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	t := strings.TrimSpace(string(b))
	if err := checkToken(t); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// checkToken refuses a short token and one that could not travel in gRPC
// metadata (white space and control characters inside, non-ASCII).
func checkToken(t string) error {
	if len(t) < minTokenLen {
		return fmt.Errorf("the worker pool token is %d characters; use at least %d (e.g. openssl rand -hex 32)", len(t), minTokenLen)
	}
	for _, r := range t {
		if r <= ' ' || r >= 0x7f {
			return errors.New("the worker pool token must be printable ASCII without spaces")
		}
	}
	return nil
}

// workerToken is the token Run gives an EXTERNAL environment's pool: the
// option, else the environment's.
func (o Options) workerToken() (string, error) {
	if o.WorkerToken != "" {
		if err := checkToken(o.WorkerToken); err != nil {
			return "", err
		}
		return o.WorkerToken, nil
	}
	return WorkerToken()
}

// addWorkerToken sets the token as a parameter of every EXTERNAL environment
// of p, which the job server passes on to the pool in StartWorker.
func addWorkerToken(p *pipepb.Pipeline, token string) error {
	for id, env := range p.GetComponents().GetEnvironments() {
		if env.GetUrn() != graphx.URNEnvExternal {
			continue
		}
		ep := &pipepb.ExternalPayload{}
		if err := proto.Unmarshal(env.GetPayload(), ep); err != nil {
			return fmt.Errorf("environment %s: %w", id, err)
		}
		if ep.Params == nil {
			ep.Params = map[string]string{}
		}
		ep.Params[WorkerTokenParam] = token
		b, err := proto.Marshal(ep)
		if err != nil {
			return fmt.Errorf("environment %s: %w", id, err)
		}
		env.Payload = b
	}
	return nil
}
