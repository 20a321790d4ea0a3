package config

import (
	"net"
	"strings"
)

// LoopbackAddr reports whether a listener bound to addr ("host:port") is
// reachable from this machine only: its host is localhost or a loopback
// address. The unspecified address ("", "0.0.0.0", "::") binds every
// interface, so it is not.
func LoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
