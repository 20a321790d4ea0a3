package networktoken

// sandboxFailures is the one table of card numbers in the network token
// simulator: sandbox test cards whose provisioning the Sandbox provider
// refuses, so merchants (and our tests) can exercise a failed provisioning:
// the 422 network_token_provisioning_failed of the provisioning endpoint,
// the 400 of a plain network-token placeholder and the "" of its
// _OR_EMPTY_STRING form. Keyed by the whole PAN, never by a BIN, so no
// range of real cards is caught; the table exists only in the sandbox
// provider, which production never registers. Every other card of a scheme
// the sandbox serves is provisioned.
//
// docs/network-tokens.md points here rather than repeating the numbers:
// this is the only place they are written outside tests. Add entries only
// here, with a comment naming the scheme.
var sandboxFailures = map[string]ProvisioningError{
	"4000000000000119": {Reason: ReasonDeclined, Message: "the token service provider declined to tokenize the card"}, // Visa
	"5200000000000007": {Reason: ReasonNotEligible, Message: "the card is not eligible for network tokenization"},     // Mastercard
}
