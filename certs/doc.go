// Package certs is the project's own small PKI and its single TLS policy.
//
// Why it exists: vault-proxy (the PCI zone) and core-api (the non-PCI core)
// talk to each other over mutual TLS. When a connector in core-api needs card
// data it sends the processor request, with placeholders, to vault-proxy's
// internal listener, and that listener must accept nothing without a client
// certificate issued by the project's CA whose identity is on its allow-list.
// This package issues those certificates for development and builds every
// tls.Config the services use, so versions, cipher suites, curves, client
// authentication and certificate reload are decided in one place (see
// BaseTLSConfig) rather than at each listener and client.
//
// Identities: a client is named by a short service name ("core-api"). Its
// certificate carries that name as the Subject Common Name and as a SPIFFE-style
// URI SAN in the trust domain TrustDomain ("spiffe://payorch.local/core-api");
// see Identity for the exact rule.
//
// Key material: WriteDevPKI generates a development PKI under .data/certs
// (ignored by git, as is every *.pem in the repository). Keys are written with
// mode 0600 into a 0700 directory and are never committed; production
// certificates come from the deployment, not from this generator.
package certs
