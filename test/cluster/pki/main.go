// Command dkv-pki writes the certificates and keys a local test control plane
// (etcd + kube-apiserver) needs, using only the Go standard library, so tests do
// not depend on an openssl binary.
//
// Usage: dkv-pki [-days N] [-force] OUTPUT_DIR
//
// Files written into OUTPUT_DIR (PEM):
//
//	ca.crt, ca.key                 self-signed CA (ECDSA P-256)
//	apiserver.crt, apiserver.key   serving cert for 127.0.0.1, ::1, localhost,
//	                               kubernetes, kubernetes.default(.svc) and 10.0.0.1
//	admin.crt, admin.key           client cert CN=admin, O=system:masters
//	sa.key, sa.pub                 RSA 2048 service-account signing key pair
//	                               (PKCS#1 private key, PKIX public key)
//
// Existing files are kept unless -force is given (so repeated runs are cheap and
// certificates stay stable); a partial set is regenerated completely.
package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

var allFiles = []string{
	"ca.crt", "ca.key",
	"apiserver.crt", "apiserver.key",
	"admin.crt", "admin.key",
	"sa.key", "sa.pub",
}

func main() {
	days := flag.Int("days", 365, "validity of the certificates in days")
	force := flag.Bool("force", false, "overwrite existing files")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s [-days N] [-force] OUTPUT_DIR\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), time.Duration(*days)*24*time.Hour, *force); err != nil {
		fmt.Fprintln(os.Stderr, "dkv-pki:", err)
		os.Exit(1)
	}
}

func run(dir string, validity time.Duration, force bool) error {
	if !force && allExist(dir) {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	notBefore := time.Now().Add(-1 * time.Hour) // tolerate small clock skew
	notAfter := notBefore.Add(validity)

	// CA
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "dkv-test-ca", Organization: []string{"dkv"}},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return fmt.Errorf("CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}

	// kube-apiserver serving certificate
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{
			"localhost", "kubernetes", "kubernetes.default",
			"kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
		},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback, net.ParseIP("10.0.0.1")},
	}, caCert, srvKey.Public(), caKey)
	if err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}

	// admin client certificate (cluster-admin through the system:masters group)
	admKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	admDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, caCert, admKey.Public(), caKey)
	if err != nil {
		return fmt.Errorf("admin certificate: %w", err)
	}

	// service-account token signing key pair (RSA is accepted everywhere)
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}

	writes := []struct {
		name, typ string
		der       []byte
		mode      os.FileMode
	}{
		{"ca.crt", "CERTIFICATE", caDER, 0o644},
		{"ca.key", "EC PRIVATE KEY", mustECKey(caKey), 0o600},
		{"apiserver.crt", "CERTIFICATE", srvDER, 0o644},
		{"apiserver.key", "EC PRIVATE KEY", mustECKey(srvKey), 0o600},
		{"admin.crt", "CERTIFICATE", admDER, 0o644},
		{"admin.key", "EC PRIVATE KEY", mustECKey(admKey), 0o600},
		{"sa.key", "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey), 0o600},
		{"sa.pub", "PUBLIC KEY", saPub, 0o644},
	}
	for _, w := range writes {
		if err := writePEM(filepath.Join(dir, w.name), w.typ, w.der, w.mode); err != nil {
			return err
		}
	}
	return nil
}

func allExist(dir string) bool {
	for _, f := range allFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return false
		}
	}
	return true
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err)
	}
	return n.Add(n, big.NewInt(1))
}

func mustECKey(k crypto.Signer) []byte {
	der, err := x509.MarshalECPrivateKey(k.(*ecdsa.PrivateKey))
	if err != nil {
		panic(err)
	}
	return der
}

// writePEM writes atomically (temp file + rename) so a concurrent reader never
// sees a half-written file.
func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := pem.Encode(tmp, &pem.Block{Type: typ, Bytes: der}); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
