// Package runners submits a built relabel pipeline to where it runs: Beam's
// Prism in this process (the default; relabel's copy, internal/prism, which
// listens on 127.0.0.1 only), a portable Beam job server such as
// Flink's or a standalone Prism (runner "universal" or "flink"), or Google
// Cloud Dataflow. Options gathers every deployment setting; Validate checks
// all of them before anything is uploaded, and Run fails fast, on one line,
// when a job server is unreachable or Dataflow has no credentials, and puts a
// deadline on waiting for the job. README.md gives the commands and IAM roles.
package runners
