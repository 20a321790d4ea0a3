// Package auth verifies and mints the bearer tokens of the API
// (docs/api-conventions.md, "Authentication"): JWTs signed ES512 (ECDSA P-521, SHA-512) whose header `kid`
// is the RFC 7638 JWK thumbprint of the signing key.
//
// Both services use the same Verifier: core-api (net/http) passes the
// Authorization header value it got from BearerToken's request, vault-proxy
// (fasthttp) passes the raw header value itself, so this package does not
// import fasthttp.
//
// # Keys
//
// An instance stores only public keys, each registered under an issuer name
// (KeySet, LoadKeySetFile, LoadKeySetDir). Whoever holds the private key
// mints tokens (Mint); IssueDevToken creates a key pair on first use and is
// what `core-api token` wraps. Revoking a key means building a KeySet
// without it and passing that to Verifier.SetKeys.
//
// # Tokens
//
// Header: {"alg":"ES512","kid":"<thumbprint>","typ":"JWT"}. Only ES512 is
// accepted: the method list is pinned, the header's alg is never trusted to
// choose a verification method, and the key is found only by kid in the
// KeySet (jku, jwk, x5u and x5c headers are ignored; a crit header is
// rejected, since this verifier understands no extensions).
//
// Claims, all required unless marked:
//
//	iss                  must equal the issuer the signing key is registered under
//	iat, nbf, exp        NumericDate seconds; exp - iat and exp - nbf at most
//	                     Config.MaxLifetime (default 30 days)
//	jti                  non-empty; copied to Principal.TokenID for audit logs
//	scopes               array of strings (may be empty: the token then may do nothing)
//	merchant_account_ids optional array of merchant account ids the token may
//	                     act in; ["*"] (AllMerchantAccounts) means every
//	                     merchant account of the instance, and "*" is refused
//	                     beside other ids; absent (or null) means the default
//	                     account only ("default", where a request that names
//	                     no account acts); present it must be non-empty
//
// Other claims (sub, aud, ...) are ignored.
//
// Clocks: iat and nbf may be at most Config.Leeway (default 30s) in the
// future and exp is honoured until Leeway after it, to absorb clock skew
// between the minting client and this instance.
//
// Replay: tokens are bearer credentials meant to be reused until they
// expire, so there is no jti replay cache. A token replayed after its exp is
// rejected by the exp check (the cache below re-checks times on every call),
// and MaxLifetime bounds how long a leaked token is worth anything.
//
// # Errors
//
// Verify answers 401 unauthorized (apierror) with a short message: "missing
// bearer token", "invalid authorization header", "invalid token", "token
// expired" or "token not yet valid". The time-based messages are given only
// for correctly signed tokens; anything wrong with format, algorithm, key,
// signature or claims is "invalid token", and the precise reason goes to
// Config.Logger at debug level, never to the client. Principal.Require
// answers 403 forbidden when a correctly authenticated token lacks a scope.
//
// # Scopes
//
// A scope is `<resource>.read` or `<resource>.write`, resource being
// lower-case letters, digits and hyphens starting with a letter
// (`buyers`, `payment-methods`, `vault-forward`, `vault-forward-configs`).
// `*.read` and `*.write` are wildcards over every resource, including the
// vault-forward ones. `<resource>.write` implies `<resource>.read` (and
// `*.write` implies `*.read`): a client allowed to change a resource may
// read it, which is what every client that writes needs anyway. Granted
// scopes that do not follow the grammar never match anything.
//
// # Performance
//
// ES512 verification is expensive: BenchmarkVerify measured about 4.8 ms of
// CPU per token on a 2-vCPU development machine (Go 1.26, P-521 has no
// assembly), against about 2.5 µs for a cached token. So the Verifier keeps
// a bounded LRU (Config.CacheSize, default 4096) of verified tokens keyed by
// the token itself, compared whole (so no hash collision can make one token
// pass for another; the entries hold the tokens, at most MaxTokenLen bytes
// each). A hit skips only the signature check and claim parsing: exp, nbf and iat are checked against now on every call, an
// expired entry is dropped, only tokens that passed every check are stored,
// and an entry is used only if it was verified against the KeySet in use
// now. Tokens that fail are never cached, so a flood of forged tokens that
// name a registered kid costs a verification each: rate-limit
// unauthenticated failures in front of Verify.
package auth
