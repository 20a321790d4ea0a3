# Key-administration policy for `vault-proxy keys rotate|status`, run by an
# operator, never by the serving process. Rewrapping never reveals a data key:
# transit decrypts and re-encrypts inside Vault.

path "transit/keys/payorch-cards" {
  capabilities = ["read"]
}

path "transit/keys/payorch-cards/rotate" {
  capabilities = ["update"]
}

# min_decryption_version: retire old key versions after a full rewrap.
path "transit/keys/payorch-cards/config" {
  capabilities = ["update"]
}

path "transit/rewrap/payorch-cards" {
  capabilities = ["update"]
}
