// Package uuidtext writes UUIDs in their canonical 36-character form
// without allocating, for hot paths that build ids into a buffer (request
// ids, audit records, associated data).
package uuidtext

import "encoding/hex"

// Append appends id as xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, lower case,
// exactly as github.com/google/uuid's String writes it.
func Append(dst []byte, id [16]byte) []byte {
	var s [36]byte
	hex.Encode(s[0:8], id[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], id[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], id[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], id[8:10])
	s[23] = '-'
	hex.Encode(s[24:], id[10:])
	return append(dst, s[:]...)
}
