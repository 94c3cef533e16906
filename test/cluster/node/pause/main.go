// Command pause is the pod sandbox's process: it holds the pod's namespaces open
// until it is told to stop, and reaps the zombies of the processes that share its
// PID namespace. What Kubernetes' pause image (build/pause/linux/pause.c) does, in
// Go: no registry is reachable here to pull registry.k8s.io/pause, and every build
// of the harness is Go without cgo. Built by ../build.sh, wrapped into an image by
// ../oci-image.sh.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
