module github.com/payorch/certs

go 1.25.0
