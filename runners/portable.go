package runners

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/metricsx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/xlangx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/extworker"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/runnerlib"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/vet"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/grpcx"

	// The SDK harness's entry point: main hands over to Beam when relabel is
	// started as a worker (--worker), which needs this hook registered (Beam's
	// universal runner imports it for the same reason).
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/harness/init"

	"github.com/relabel/relabel/runners/internal/prism"
)

// executePrism runs p on Prism: the standalone job server at --endpoint when
// one is given, otherwise a Prism job server of this process's own, on
// 127.0.0.1 only (Beam's prism.Execute serves it on every interface), closed
// when the job ends. A stopped run (ctx done) cancels the job there.
func executePrism(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error) {
	if *jobopts.Endpoint != "" {
		return executePortable(ctx, p, *jobopts.Endpoint, false)
	}
	srv, err := prism.Start()
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	return executePortable(ctx, p, srv.Endpoint(), true)
}

// executeUniversal runs p on the portable job server at --endpoint (Flink's,
// or any other).
func executeUniversal(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error) {
	return executePortable(ctx, p, *jobopts.Endpoint, false)
}

// dialWait bounds the connection to the job server (Beam's own value; the
// endpoint has already answered checkEndpoint).
const dialWait = 2 * time.Minute

// executePortable submits p to the job server at endpoint and waits for the
// job, as Beam's universal.Execute and runnerlib.Execute do, with two
// differences: in LOOPBACK the (unused) worker artifact is an empty file in a
// directory of this run's, removed when it ends, where Beam leaves an empty
// beamloopbackworker-N in TMPDIR after every run; and with cancel, a ctx that
// ends first cancels the job on the server.
func executePortable(ctx context.Context, p *beam.Pipeline, endpoint string, cancel bool) (beam.PipelineResult, error) {
	if *jobopts.Strict {
		if _, err := vet.Execute(ctx, p); err != nil {
			return nil, fmt.Errorf("strictness check failed: %w", err)
		}
	}
	edges, _, err := p.Build()
	if err != nil {
		return nil, err
	}
	envUrn := jobopts.GetEnvironmentUrn(ctx)
	getEnvCfg := jobopts.GetEnvironmentConfig
	loopback := jobopts.IsLoopback()
	if loopback {
		srv, err := extworker.StartLoopback(ctx, 0) // on localhost
		if err != nil {
			return nil, err
		}
		defer srv.Stop(context.WithoutCancel(ctx))
		getEnvCfg = srv.EnvironmentConfig
	}
	xlangx.ResolveArtifacts(ctx, edges, nil)
	env, err := graphx.CreateEnvironment(ctx, envUrn, getEnvCfg)
	if err != nil {
		return nil, fmt.Errorf("generating model pipeline: %w", err)
	}
	pipeline, err := graphx.Marshal(edges, &graphx.Options{
		Environment:           env,
		PipelineResourceHints: jobopts.GetPipelineResourceHints(),
	})
	if err != nil {
		return nil, fmt.Errorf("generating model pipeline: %w", err)
	}

	if workerToken != "" {
		if err := addWorkerToken(pipeline, workerToken); err != nil {
			return nil, fmt.Errorf("adding the worker pool token: %w", err)
		}
	}

	opt := &runnerlib.JobOptions{
		Name:         jobopts.GetJobName(),
		Experiments:  jobopts.GetExperiments(),
		Worker:       *jobopts.WorkerBinary,
		RetainDocker: *jobopts.RetainDockerContainers,
		Parallelism:  *jobopts.Parallelism,
		Loopback:     loopback,
	}
	bin := opt.Worker
	if loopback {
		dir, err := os.MkdirTemp("", "relabel-loopback-")
		if err != nil {
			return nil, fmt.Errorf("loopback worker placeholder: %w", err)
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "worker")
		if err := os.WriteFile(bin, nil, 0o600); err != nil {
			return nil, fmt.Errorf("loopback worker placeholder: %w", err)
		}
	}
	if bin == "" {
		return nil, errors.New("no worker binary (--worker_binary) for a non-LOOPBACK environment")
	}
	if err := runnerlib.UpdateGoEnvironmentWorker(bin, pipeline); err != nil {
		return nil, err
	}

	cc, err := grpcx.Dial(ctx, endpoint, dialWait)
	if err != nil {
		return nil, fmt.Errorf("connecting to job service: %w", err)
	}
	defer cc.Close()
	client := jobpb.NewJobServiceClient(cc)
	// The steps and log lines of Beam's runnerlib.Execute.
	prepID, artifactEndpoint, st, err := runnerlib.Prepare(ctx, client, pipeline, opt)
	if err != nil {
		return nil, err
	}
	log.Infof(ctx, "Prepared job with id: %v and staging token: %v", prepID, st)
	token, err := runnerlib.Stage(ctx, prepID, artifactEndpoint, bin, st)
	if err != nil {
		return nil, err
	}
	log.Infof(ctx, "Staged binary artifact with token: %v", token)
	jobID, err := runnerlib.Submit(ctx, client, prepID, token)
	if err != nil {
		return nil, err
	}
	log.Infof(ctx, "Submitted job: %v", jobID)
	err = runnerlib.WaitForCompletion(ctx, client, jobID)
	if cause := errors.Unwrap(err); cause != nil && strings.HasPrefix(err.Error(), "job "+jobID+" failed:\n") {
		// Beam puts the job's error on the line after "job ID failed:",
		// where a one-line report of the error loses it.
		err = fmt.Errorf("job %s failed: %w", jobID, cause)
	}
	if ctx.Err() != nil {
		if cancel {
			cctx, done := context.WithTimeout(context.WithoutCancel(ctx), cancelGrace)
			client.Cancel(cctx, &jobpb.CancelJobRequest{JobId: jobID})
			done()
		}
		return nil, context.Cause(ctx)
	}
	res := &portableResult{jobID: jobID}
	m, merr := client.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: jobID})
	if merr == nil {
		ms := m.GetMetrics()
		res.metrics = metricsx.FromMonitoringInfos(pipeline, ms.GetAttempted(), ms.GetCommitted())
	}
	if err != nil {
		return res, err
	}
	if merr != nil {
		return res, fmt.Errorf("failed to get metrics: %w", merr)
	}
	return res, nil
}

// portableResult is a finished job's id and metrics.
type portableResult struct {
	jobID   string
	metrics *metrics.Results
}

func (r *portableResult) Metrics() metrics.Results {
	if r.metrics == nil {
		return metrics.Results{}
	}
	return *r.metrics
}

func (r *portableResult) JobID() string { return r.jobID }
