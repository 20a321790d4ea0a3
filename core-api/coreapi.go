// Package coreapi holds the non-PCI core's domain: merchant accounts,
// buyers, and payment methods by token (cards, gift cards, bank accounts
// with their mandates). It refers to cards only by token; the compiler
// keeps the card vault out (see deps_test.go).
package coreapi
