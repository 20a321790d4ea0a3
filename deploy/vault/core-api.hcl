# Runtime policy for core-api: encrypt and decrypt payment service
# credentials with its own derived transit key, and nothing else. It cannot
# read, rotate or export the key, and reaches none of vault-proxy's card
# keys (payorch-cards, payorch-fingerprint) on the same mount.
# The mount is "transit"; tests rewrite the prefix to an isolated mount.

path "transit/encrypt/core-api-credentials" {
  capabilities = ["update"]
}

path "transit/decrypt/core-api-credentials" {
  capabilities = ["update"]
}
