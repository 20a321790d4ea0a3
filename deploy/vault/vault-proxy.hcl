# Runtime policy for vault-proxy: the least it needs to vault and read cards.
# It can ask for new wrapped data keys, unwrap them, and read the fingerprint
# HMAC key. It cannot rotate keys, change key configuration, export the card
# key, or read anything outside its two transit keys.
# The mount is "transit"; tests rewrite the prefix to an isolated mount.

path "transit/datakey/wrapped/payorch-cards" {
  capabilities = ["update"]
}

path "transit/decrypt/payorch-cards" {
  capabilities = ["update"]
}

# Read key metadata (versions) for readiness and `keys status`.
path "transit/keys/payorch-cards" {
  capabilities = ["read"]
}

# The fingerprint key is an HMAC key held in Vault. vault-proxy loads it at
# start so that fingerprinting a card does not cost a Vault round trip.
path "transit/export/hmac-key/payorch-fingerprint" {
  capabilities = ["read"]
}

path "transit/hmac/payorch-fingerprint" {
  capabilities = ["update"]
}
