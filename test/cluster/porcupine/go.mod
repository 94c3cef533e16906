// The linearizability checker of the Day-2 tests' client histories (porcupine,
// as etcd's own robustness tests use), in a module of its own so that its
// requirements never move the control plane's pins. ./build.sh builds it.
module dkv.example.com/test/porcupine

go 1.26

require github.com/anishathalye/porcupine v1.3.1
