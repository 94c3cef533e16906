// CoreDNS with only the plugins the real node's cluster DNS needs (issue 33):
// the `kubernetes` plugin answering for the cluster domain from the API server
// (Services, and a headless Service's per-pod names from its EndpointSlices),
// with `bind` (only the node's address), `errors`, `health` and `ready`. No `forward`: a name outside the cluster
// domain gets SERVFAIL instead of a query to a resolver beyond this machine.
// The upstream binary (github.com/coredns/coredns, coredns.go) is the same
// main with every plugin linked in, which would pull in the cloud providers'
// SDKs (route53, azure, clouddns) for nothing.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

// In plugin.cfg's order, which is the order a query passes through them.
var directives = []string{"bind", "ready", "health", "errors", "kubernetes"}

func init() { dnsserver.Directives = directives }

func main() { coremain.Run() }
