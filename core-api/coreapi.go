// Package coreapi holds the non-PCI core's domain: merchant accounts,
// buyers, payment methods by token, transactions. It refers to cards only by
// token; the compiler keeps the card vault out (see deps_test.go).
package coreapi
