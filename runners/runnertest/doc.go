// Package runnertest starts Beam's standalone Prism job server for tests that
// submit pipelines as a remote runner would (runner universal, LOOPBACK
// environment). Prism listens on all interfaces and has no flag to narrow
// that, so Main first moves the whole test binary into a private network
// namespace where only loopback exists; the job server is then reachable
// from the test and from nowhere else.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { runnertest.Main(m) }
//
//	func TestRemote(t *testing.T) {
//		endpoint := runnertest.StartPrism(t)
//		_, err := runners.Run(ctx, p, runners.Options{
//			Runner: runners.Universal, Endpoint: endpoint, EnvironmentType: runners.Loopback})
//		...
//	}
package runnertest
